"""Available memory: the budget the total is compared against.

Order, first non-zero answer wins, as mlxcel's `available_bytes`:
1. `--memory-limit`, then `MLXCEL_MEMORY_LIMIT` (the size grammar);
2. the device limit MLX would use: 80% of device memory (MLX's allocators set
   `memory_limit = total * 0.8`; 96 GiB of VRAM on gfx1151 gives 76.80 GiB),
   read from sysfs or nvidia-smi, never by starting a GPU runtime;
3. Apple unified memory, floored to whole GiB;
4. `/proc/meminfo` `MemAvailable`, else `MemTotal`;
5. 0 (nothing fits).
This module is the rule alone: each reading comes from a probe passed in, called only
when the sources before it gave nothing (so a flag never runs `nvidia-smi`). The
machine's own probes are wired in by `core.device.available.read_available_memory`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.backend import Backend
from core.device_memory import DeviceMemory, mlx_device_limit
from core.display_text import shorten
from core.memory_size import is_explicitly_unset, parse_optional_memory_size
from core.units import GIB

MEMORY_LIMIT_ENV = "MLXCEL_MEMORY_LIMIT"


@dataclass(frozen=True)
class AvailableMemory:
    """Available bytes and a one-line account of where they came from."""

    bytes: int
    source: str
    warning: str | None = None
    unread: str | None = None
    """Why no source gave a figure (the 0 is mlxcel's fallback, not a reading), else None:
    a verdict against it is mlxcel's and vramscope never claims one."""

    @property
    def unread_line(self) -> str | None:
        """vramscope's one line saying the memory was never read (None when it was)."""
        if self.unread is None:
            return None
        return (
            f"available memory was not read ({self.unread}): mlxcel's fallback is 0 bytes, "
            "so its DOES NOT FIT is not a verdict; give --memory-limit SIZE"
        )


Probe = Callable[[], int | None]
DeviceProbe = Callable[[Backend], DeviceMemory | None]


def resolve_available_memory(
    backend: Backend,
    *,
    cli_limit: int | None = None,
    env_limit: str | None = None,
    device_probe: DeviceProbe,
    unified_probe: Probe,
    meminfo_probe: Probe,
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
    # mlxcel's rule: 80% of the pool's total (not vramscope's free or TTM-capped limit)
    if device is not None and mlx_device_limit(device.total) > 0:
        return AvailableMemory(
            mlx_device_limit(device.total), f"MLX device limit: 80% of {device.device}", warning
        )
    unified = unified_probe()
    if unified:
        return AvailableMemory(unified * GIB, "unified memory (hw.memsize)", warning)
    meminfo = meminfo_probe()
    if meminfo:
        return AvailableMemory(meminfo, "/proc/meminfo", warning)
    return AvailableMemory(0, "nothing detected", warning, unread="no source gave a figure")
