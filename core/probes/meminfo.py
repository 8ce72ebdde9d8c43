"""Linux `/proc/meminfo`: `MemTotal` and `MemAvailable`, in bytes."""

from __future__ import annotations

from pathlib import Path

from core.numbers import decimal_to_int
from core.probes.pool import PoolReading
from core.units import sat_sub


def parse_meminfo(text: str) -> int | None:
    """`MemAvailable` (preferred) or `MemTotal` from /proc/meminfo text, in bytes."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        for key in ("MemAvailable:", "MemTotal:"):
            if line.startswith(key):
                fields = line[len(key) :].split()
                kib = decimal_to_int(fields[0]) if fields and fields[0].isascii() else None
                if kib is not None and fields[0].isdigit():
                    values[key] = kib * 1024
    return values.get("MemAvailable:") or values.get("MemTotal:")


def read_meminfo(path: str = "/proc/meminfo") -> int | None:
    """Linux available memory (mlxcel's reading), or None off Linux."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return parse_meminfo(fh.read())
    except OSError:
        return None


def read_meminfo_pool(path: Path = Path("/proc/meminfo")) -> PoolReading | None:
    """`MemTotal` and `MemTotal - MemAvailable` from /proc/meminfo, in bytes."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            values[key] = int(fields[0]) * 1024
    total = values.get("MemTotal")
    if not total:
        return None
    available = values.get("MemAvailable", total)
    return PoolReading(total, sat_sub(total, available))
