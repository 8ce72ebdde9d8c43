"""The device's real memory as vramscope reads it (total, used by others, free), and
what `--memory-limit free|total` makes of it: data and arithmetic, no reading.

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

from dataclasses import dataclass, field

from core.estimate.available import AvailableMemory, mlx_device_limit
from core.units import GIB, format_bytes_short, sat_sub

TTM_SOURCE = "/sys/module/ttm/parameters/pages_limit"
MEMINFO_SOURCE = "/proc/meminfo"
SYSTEM_RESERVE = 8 * GIB
"""What the suggested `ttm.pages_limit` leaves the system of `MemTotal` on an APU."""


@dataclass(frozen=True)
class Term:
    """One figure a budget is the smallest of: what it is, its bytes, where it was read."""

    what: str
    bytes: int
    source: str

    @property
    def words(self) -> str:
        """`MemAvailable 110.00 GiB (/proc/meminfo)`."""
        return f"{self.what} {format_bytes_short(self.bytes)} ({self.source})"


@dataclass(frozen=True)
class DeviceMemory:
    """What `--memory-limit free|total` reads: one device's pool, with its account."""

    device: str
    total: int
    used: int
    how: str
    limit_fraction: float | None
    """MLX's limit as a fraction of total (0.8 on GPUs), or None (the CPU: none)."""
    notes: tuple[str, ...] = field(default=())
    mlx_limit: int | None = None
    """MLX's own limit (`mx.get_memory_limit()`) when MLX was asked; beats the fraction."""
    target: str | None = None
    """The card's gfx target (`gfx1151`, from the KFD topology), where it was read: the
    device a calibration must be for."""
    pool_name: str = "pool"
    """What the pool is called in a budget's terms (`GTT`, `VRAM`, `memory`)."""
    host_available: int | None = None
    """An APU's `MemAvailable` (its pool is system memory), else None."""
    ttm_limit: int | None = None
    """An APU's TTM limit in bytes (`ttm.pages_limit` x page size), else None."""

    @property
    def line(self) -> str:
        """`Device: card1 (...): total 24.00 GiB, used by others 1.50 GiB, free 22.50 GiB (how)`."""
        return (
            f"Device: {self.device}: total {format_bytes_short(self.total)}, "
            f"used by others {format_bytes_short(self.used)}, "
            f"free {format_bytes_short(self.free)} ({self.how})"
        )

    def json(self) -> dict[str, object]:
        """vramscope's `device` JSON object (beside mlxcel's keys, never in place of one)."""
        return {
            "name": self.device,
            "total_bytes": self.total,
            "used_bytes": self.used,
            "free_bytes": self.free,
            "limit_bytes": self.limit,
            "how": self.how,
            "free_terms": [
                {"what": t.what, "bytes": t.bytes, "source": t.source} for t in self.free_terms
            ],
        }

    @property
    def usable_total(self) -> int:
        """The pool's total, at most the TTM limit (an APU's GTT never maps past it)."""
        return self.total if self.ttm_limit is None else min(self.total, self.ttm_limit)

    @property
    def limit(self) -> int:
        """The most MLX lets this device hold: its own figure, 80% on GPUs, else total
        (of the usable total: the TTM limit caps an APU's)."""
        total = self.usable_total
        if self.mlx_limit is not None:
            return min(self.mlx_limit, total)
        return mlx_device_limit(total) if self.limit_fraction else total

    @property
    def free_terms(self) -> tuple[Term, ...]:
        """The figures `free` is the smallest of, each with its source: the pool's free
        memory, and on an APU `MemAvailable` and the TTM limit less the pool's use."""
        terms = [Term(f"{self.pool_name} free", sat_sub(self.total, self.used), self.how)]
        if self.host_available is not None:
            terms.append(Term("MemAvailable", self.host_available, MEMINFO_SOURCE))
        if self.ttm_limit is not None:
            room = sat_sub(self.ttm_limit, self.used)
            terms.append(Term(f"TTM limit less {self.pool_name} used", room, TTM_SOURCE))
        return tuple(terms)

    @property
    def free(self) -> int:
        """What is free now: total less used, and on an APU the smallest of `free_terms`."""
        return min(t.bytes for t in self.free_terms)


def device_budget(which: str, device: DeviceMemory) -> AvailableMemory:
    """`free` or `total` of a device read, as the estimate's available memory."""
    limit = device.limit
    if device.mlx_limit is not None:
        capped = "MLX's own limit"
    else:
        capped = "MLX's 80% limit" if device.limit_fraction else ""
    if which == "total":
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
