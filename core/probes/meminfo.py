"""Linux `/proc/meminfo`: `MemTotal` and `MemAvailable`, in bytes, and why not when
they cannot be read.

A value counts only as a decimal of ASCII digits whose bytes (kB x 1024) fit in a u64,
as mlxcel's `parse::<u64>()` takes it; anything else (a missing or unreadable file,
non-ASCII digits, a value past 2^64-1 bytes) is no reading, and `meminfo_fault` says
which, so a caller never turns an unread figure into a verdict.
"""

from __future__ import annotations

from pathlib import Path

from core.numbers import decimal_to_int
from core.probes.pool import PoolReading
from core.regular_file import read_small_text
from core.units import U64_MAX, sat_sub

MEMINFO = Path("/proc/meminfo")
_KEYS = ("MemAvailable", "MemTotal")
MEMINFO_CAP = 256 * 1024
"""/proc/meminfo is about 1.5 kB; more is not it."""


def _fields(text: str) -> dict[str, int | str]:
    """`MemAvailable` and `MemTotal`: bytes, or the words saying why the value is none."""
    out: dict[str, int | str] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key not in _KEYS or key in out:
            continue
        fields = rest.split()
        token = fields[0] if fields else ""
        kib = decimal_to_int(token) if token.isascii() and token.isdigit() else None
        if kib is None:
            out[key] = f"{key} is not a count of kB ({token[:24]!r})"
        elif kib * 1024 > U64_MAX:
            out[key] = f"{key} of {token[:24]} kB is past 2^64-1 bytes"
        else:
            out[key] = kib * 1024
    return out


def parse_meminfo(text: str) -> int | None:
    """`MemAvailable` (preferred) or `MemTotal` from /proc/meminfo text, in bytes
    (mlxcel's reading: a zero or unreadable value is none)."""
    values = _fields(text)
    for key in _KEYS:
        value = values.get(key)
        if isinstance(value, int) and value:
            return value
    return None


def read_text(path: Path) -> str | OSError:
    """The file's text, or the error that stopped the read (a FIFO, a device, a file
    past `MEMINFO_CAP`: never a hang)."""
    try:
        return read_small_text(path, MEMINFO_CAP)
    except OSError as exc:
        return exc


def read_meminfo(path: Path = MEMINFO) -> int | None:
    """Linux available memory (mlxcel's reading), or None off Linux."""
    text = read_text(path)
    return None if isinstance(text, OSError) else parse_meminfo(text)


def meminfo_fault(path: Path = MEMINFO) -> str | None:
    """Why `read_meminfo(path)` reads nothing (None when it reads a figure)."""
    text = read_text(path)
    if isinstance(text, OSError):
        return f"{path} cannot be read ({text.strerror or type(text).__name__})"
    if parse_meminfo(text) is not None:
        return None
    values = _fields(text)
    faults = [v for v in values.values() if isinstance(v, str)]
    if faults:
        return f"{path}: {'; '.join(faults)}"
    if values:
        return f"{path}: MemAvailable and MemTotal are 0"
    return f"{path} has no MemAvailable or MemTotal line"


def read_meminfo_values(path: Path = MEMINFO) -> dict[str, int | str]:
    """`MemTotal` and `MemAvailable`: bytes, or the words saying why there is none."""
    text = read_text(path)
    if isinstance(text, OSError):
        why = f"{path} cannot be read ({text.strerror or type(text).__name__})"
        return {key: why for key in _KEYS}
    values = _fields(text)
    return {key: values.get(key, f"no {key} line in {path}") for key in _KEYS}


def read_meminfo_pool(path: Path = MEMINFO) -> PoolReading | None:
    """`MemTotal` and `MemTotal - MemAvailable` from /proc/meminfo, in bytes; None when
    MemTotal is 0 or not a reading."""
    text = read_text(path)
    if isinstance(text, OSError):
        return None
    values = _fields(text)
    total = values.get("MemTotal")
    if not isinstance(total, int) or not total:
        return None
    available = values.get("MemAvailable")
    if not isinstance(available, int):
        available = total
    return PoolReading(total, sat_sub(total, available))
