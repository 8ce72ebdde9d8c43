"""What `--memory-limit free|total` makes of the device's real memory as vramscope
reads it (`core.device_memory.DeviceMemory`: total, used by others, free): data and
arithmetic, no reading.

`--memory-limit total` is MLX's limit on that pool (80% of total, as MLX's allocators
set it, or MLX's own figure when MLX was asked); `--memory-limit free` is the smaller
of that limit and what is free now. On the CPU, total is `MemTotal` and free is
`MemAvailable`. The readings come from `core.device.reading`.

On an APU (gfx1151: a small VRAM carve-out, the rest GTT, i.e. system memory) what is
free now is the smallest of the pool's free memory, `MemAvailable` (the host's own
processes draw on the same memory) and the TTM limit less what the pool holds (the
kernel maps no more GTT than `ttm.pages_limit`); the total is capped at the TTM limit.
`free_terms` names each figure and where it was read, so every surface says why.
"""

from __future__ import annotations

from core.device_memory import Budget, DeviceMemory
from core.estimate.available import AvailableMemory
from core.units import GIB, format_bytes_short, sat_sub

SYSTEM_RESERVE = 8 * GIB
"""What the suggested `ttm.pages_limit` leaves the system of `MemTotal` on an APU."""


def device_budget(which: Budget, device: DeviceMemory) -> AvailableMemory:
    """`free` or `total` of a device read, as the estimate's available memory."""
    limit = device.limit
    if device.mlx_limit is not None:
        capped = "MLX's own limit"
    else:
        capped = "MLX's 80% limit" if device.limit_fraction else ""
    if which is Budget.TOTAL:
        value = limit
        source = f"total of {device.device}" + (f" ({capped})" if capped else "")
    else:
        value = min(device.free, limit)
        terms = device.free_terms
        smallest = (
            f" (the smallest of {', '.join(t.words for t in terms)})" if len(terms) > 1 else ""
        )
        source = (
            f"free on {device.device}: {format_bytes_short(device.free)} of "
            f"{format_bytes_short(device.total)}, {format_bytes_short(device.used)} in use"
            + smallest
            + (f", capped at {capped}" if capped and value == limit else "")
        )
    return AvailableMemory(value, f"{source}; {device.how}")


def ttm_fix(device: DeviceMemory, mem_total: int | None, page_size: int) -> str | None:
    """The kernel parameter that raises an APU's TTM limit, when it is below what the
    machine could give (`MemTotal` less `SYSTEM_RESERVE` for the system); else None."""
    if device.ttm_limit is None or not mem_total or page_size <= 0:
        return None
    could = sat_sub(mem_total, SYSTEM_RESERVE)
    if device.ttm_limit >= could:
        return None
    pages = could // page_size
    return (
        f"the TTM limit ({format_bytes_short(device.ttm_limit)}) is below what this machine "
        f"could give ({format_bytes_short(could)}: MemTotal less "
        f"{format_bytes_short(SYSTEM_RESERVE)} for the system): boot with "
        f"ttm.pages_limit={pages} on the kernel command line (amdgpu.gttsize is deprecated)"
    )
