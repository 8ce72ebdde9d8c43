"""Which estimate a measured peak is held against, and by how much it covers it."""

from __future__ import annotations

from dataclasses import dataclass

from core.backend import Backend

_DEVICE_BACKENDS = {"rocm": "rocm", "cuda": "cuda", "metal": "metal", "cpu": "cpu"}


def comparison_backend(engine: str, device_kind: str) -> Backend:
    """The estimate formula a peak is held against.

    A torch run that emulates MLX-ROCm's in-flight queue is compared with the ROCm
    formula (in-flight term included) on any device (`MeasuredPeak.estimate_backend`
    handles a torch run without the queue). An mlx peak is compared with the formula
    of the backend it ran on: the CPU, Metal and CUDA have no in-flight term; ROCm
    (and a GPU of unknown kind) has it.
    """
    if engine != "mlx":
        return Backend.ROCM
    return Backend(_DEVICE_BACKENDS.get(device_kind, "rocm"))


@dataclass(frozen=True)
class Margin:
    """Estimate against peak."""

    bytes: int
    """estimate - peak (negative when the estimate is under the peak)."""
    percent: float
    """Margin as a percentage of the peak."""

    @property
    def covered(self) -> bool:
        """True when the estimate is at least the peak."""
        return self.bytes >= 0


def margin(estimate_bytes: int, peak_bytes: int) -> Margin:
    """How far an estimate sits above (or below) a measured peak."""
    diff = estimate_bytes - peak_bytes
    return Margin(diff, 100.0 * diff / peak_bytes if peak_bytes else 0.0)
