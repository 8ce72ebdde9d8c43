"""What a calibration is for: the engine, the formula, the device it was measured on.

Runs are fitted per key, a saved calibration replaces the one of the same key, and the
words of a key name all of it (`mlx on rocm gfx1151`; `torch on cpu AMD EPYC, held
against ROCm's formula` for torch runs that emulated MLX-ROCm's queue on the CPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.backend import Backend
from core.measurement.engine import Engine


@dataclass(frozen=True)
class CalibrationKey:
    """One group of runs, and the calibration fitted on it."""

    engine: Engine | None
    """None: runs that name no engine (a CSV without the column)."""
    backend: Backend
    """The formula whose terms the runs are held against (and the estimates it calibrates)."""
    device: str | None
    """The device the runs were measured on (gfx target, else its name); None: not named."""
    measured_on: Backend | None = None
    """The kind of device, where it is not `backend`; None: the same."""

    @property
    def device_kind(self) -> Backend:
        """The kind of device the runs ran on."""
        return self.measured_on or self.backend

    @property
    def words(self) -> str:
        """`mlx on rocm gfx1151`, `any engine on cpu (any device)`, `torch on cpu AMD
        EPYC, held against ROCm's formula`."""
        engine = self.engine.value if self.engine is not None else "any engine"
        text = f"{engine} on {self.device_kind.value} {self.device or '(any device)'}"
        if self.device_kind is not self.backend:
            text += f", held against {self.backend.label}'s formula"
        return text

    def sort_key(self) -> tuple[str, str, str, str]:
        """A stable order for reports."""
        return (
            self.engine.value if self.engine is not None else "",
            self.backend.value,
            self.device or "",
            self.device_kind.value,
        )
