"""The device's real memory as vramscope reads it (total, used by others, free), and
what `--memory-limit free|total` makes of it: data and arithmetic, no reading.

`--memory-limit total` is MLX's limit on that pool (80% of total, as MLX's allocators
set it, or MLX's own figure when MLX was asked); `--memory-limit free` is the smaller
of that limit and what is free now. On the CPU, total is `MemTotal` and free is
`MemAvailable`. The readings come from `core.device.reading`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.estimate.available import AvailableMemory, mlx_device_limit
from core.units import format_bytes_short, sat_sub


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
        }

    @property
    def limit(self) -> int:
        """The most MLX lets this device hold: its own figure, 80% on GPUs, else total."""
        if self.mlx_limit is not None:
            return min(self.mlx_limit, self.total)
        return mlx_device_limit(self.total) if self.limit_fraction else self.total

    @property
    def free(self) -> int:
        """Total less used."""
        return sat_sub(self.total, self.used)


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
        source = (
            f"free on {device.device}: {format_bytes_short(device.free)} of "
            f"{format_bytes_short(device.total)}, {format_bytes_short(device.used)} in use"
            + (f", capped at {capped}" if capped and value == limit else "")
        )
    return AvailableMemory(value, f"{source}; {device.how}")
