"""Available memory: the budget the total is compared against.

Order, first non-zero answer wins, as mlxcel's `available_bytes`:
1. `--memory-limit`, then `MLXCEL_MEMORY_LIMIT` (the size grammar);
2. the device limit MLX would use: 80% of device memory (MLX's allocators set
   `memory_limit = total * 0.8`; 96 GiB of VRAM on gfx1151 gives 76.80 GiB),
   read from sysfs or nvidia-smi, never by starting a GPU runtime;
3. Apple unified memory, floored to whole GiB;
4. `/proc/meminfo` `MemAvailable`, else `MemTotal`;
5. 0 (nothing fits).
Every probe is injectable so tests never depend on the machine.
"""

from __future__ import annotations

import glob
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from core.backend import Backend
from core.display_text import shorten
from core.memory_size import is_explicitly_unset, parse_optional_memory_size
from core.numbers import decimal_to_int
from core.units import GIB, MIB

MEMORY_LIMIT_ENV = "MLXCEL_MEMORY_LIMIT"
MLX_DEVICE_LIMIT_FRACTION = 0.8


@dataclass(frozen=True)
class AvailableMemory:
    """Available bytes and a one-line account of where they came from."""

    bytes: int
    source: str
    warning: str | None = None


@dataclass(frozen=True)
class DeviceMemory:
    """A device's total memory, read without a GPU runtime."""

    total_bytes: int
    name: str


Probe = Callable[[], int | None]
DeviceProbe = Callable[[Backend], DeviceMemory | None]


def mlx_device_limit(total: int) -> int:
    """MLX's default allocator limit for a device of `total` bytes (`size_t(total * 0.8)`)."""
    return int(total * MLX_DEVICE_LIMIT_FRACTION)


def read_amdgpu_vram(
    pattern: str = "/sys/class/drm/card*/device/mem_info_vram_total",
) -> DeviceMemory | None:
    """The largest amdgpu VRAM size in sysfs (the first device MLX would use)."""
    best: DeviceMemory | None = None
    for path in sorted(glob.glob(pattern)):
        try:
            with open(path, encoding="ascii") as fh:
                total = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        if total > 0 and (best is None or total > best.total_bytes):
            best = DeviceMemory(total, f"amdgpu VRAM ({path.split('/')[4]})")
    return best


def query_nvidia_smi(timeout: float = 2.0) -> tuple[str, int, int] | None:
    """GPU 0's name, total and used bytes from `nvidia-smi` (no CUDA context), or None."""
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,memory.total,memory.used",
                "--format=csv,noheader,nounits",
                "-i",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        ).stdout
        name, total, used = (part.strip() for part in out.splitlines()[0].rsplit(",", 2))
        return name, int(total) * MIB, int(used) * MIB
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def read_nvidia_memory(timeout: float = 2.0) -> DeviceMemory | None:
    """GPU 0's memory from `nvidia-smi` (NVML; no CUDA context is created)."""
    found = query_nvidia_smi(timeout)
    return None if found is None else DeviceMemory(found[1], found[0])


def probe_device_memory(backend: Backend) -> DeviceMemory | None:
    """The device size for a GPU backend, or None (CPU, Metal or nothing readable)."""
    if backend is Backend.ROCM:
        return read_amdgpu_vram()
    if backend is Backend.CUDA:
        return read_nvidia_memory()
    return None


def read_unified_memory_gib() -> int | None:
    """macOS `hw.memsize` floored to whole GiB (mlxcel's `unified_memory_gb`)."""
    if sys.platform != "darwin":
        return None
    try:
        out = subprocess.run(
            ["sysctl", "-n", "hw.memsize"], capture_output=True, text=True, timeout=2.0, check=True
        ).stdout
        return int(out.strip()) // GIB
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


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
    """Linux available memory, or None off Linux."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return parse_meminfo(fh.read())
    except OSError:
        return None


def resolve_available_memory(
    backend: Backend,
    *,
    cli_limit: int | None = None,
    env_limit: str | None = None,
    device_probe: DeviceProbe = probe_device_memory,
    unified_probe: Probe = read_unified_memory_gib,
    meminfo_probe: Probe = read_meminfo,
) -> AvailableMemory:
    """Walk the sources in order; each probe is called only if the ones before fail."""
    if cli_limit:
        return AvailableMemory(cli_limit, "--memory-limit")
    warning = None
    if env_limit is not None:
        limit = parse_optional_memory_size(env_limit)
        if limit:
            return AvailableMemory(limit, MEMORY_LIMIT_ENV)
        if not is_explicitly_unset(env_limit):
            warning = (
                f'ignoring {MEMORY_LIMIT_ENV}="{shorten(env_limit)}" (not a size such as 64GB, '
                "512M or 1073741824)"
            )
    device = device_probe(backend)
    if device is not None and mlx_device_limit(device.total_bytes) > 0:
        return AvailableMemory(
            mlx_device_limit(device.total_bytes), f"MLX device limit: 80% of {device.name}", warning
        )
    unified = unified_probe()
    if unified:
        return AvailableMemory(unified * GIB, "unified memory (hw.memsize)", warning)
    meminfo = meminfo_probe()
    if meminfo:
        return AvailableMemory(meminfo, "/proc/meminfo", warning)
    return AvailableMemory(0, "nothing detected", warning)
