"""A device's memory pool as read (total, used by others, free), and MLX's limit on it:
data and arithmetic, no reading.

The one `DeviceMemory`: the readings in `core.device.reading` build it for
`--memory-limit free|total` (`core.device.memory.device_budget`), and the probe of
mlxcel's available-memory rule (`core.estimate.available`, step 2) hands the rule one,
whose total and name are all the rule reads. It sits beside the packages so the
estimate can take it without importing `core.device` (which stands above the estimate).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.kind import Kind
from core.units import format_bytes_short, sat_sub

MLX_DEVICE_LIMIT_FRACTION = 0.8
TTM_SOURCE = "/sys/module/ttm/parameters/pages_limit"
MEMINFO_SOURCE = "/proc/meminfo"


class Budget(Kind):
    """Which of a device's figures `--memory-limit free|total` takes (its word)."""

    FREE = "free"
    TOTAL = "total"


def mlx_device_limit(total: int) -> int:
    """MLX's default allocator limit for a device of `total` bytes (`size_t(total * 0.8)`)."""
    return int(total * MLX_DEVICE_LIMIT_FRACTION)


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
