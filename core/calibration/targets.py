"""What a calibration can fit: the recorded figures `vramscope calibrate --target` picks,
and each in words for the engine and device that recorded it.

The names are plain strings here, so that the command line can offer the choices
without importing the fit; the words come from the engines' specs
(`core.measurement.engine.EngineSpec.peak_words`, `figure_labels`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.backend import Backend
    from core.measurement.engine import Engine

PEAK = "peak"
"""Each engine's own headline peak: MLX's `mx.get_peak_memory()` (as in mlxcel's rows),
the torch engine's allocator peak on a GPU, its RSS over baseline on the CPU."""
DEFAULT_TARGET = PEAK
TARGETS = (PEAK, "active_plus_cache", "os_peak")
"""The figures `calibrate --target` picks from (the last two: the mlx engine's only)."""
OLD_NAMES = {"mlx_peak": PEAK}
"""Names earlier versions wrote (and `--target` still takes): `mlx_peak` was the
headline peak, whatever engine recorded it."""
TARGET_NAMES = (*TARGETS, *OLD_NAMES)
"""Every name a calibration file or `--target` may hold."""


def target_named(name: str) -> str:
    """The target a name stands for (`mlx_peak` -> `peak`); ValueError for any other."""
    target = OLD_NAMES.get(name, name)
    if target not in TARGETS:
        raise ValueError(f"expected one of {', '.join(TARGETS)}")
    return target


def target_words(target: str, engine: Engine | None, device: Backend) -> str:
    """What a calibration of `target` fitted, for runs of `engine` (None: not named)
    measured on `device`: "the torch engine's peak resident memory (RSS) over its
    baseline", "MLX's peak (mx.get_peak_memory)"."""
    from core.measurement.engine import Engine

    if target == PEAK:
        if engine is None:
            return "the runs' recorded peak (engine not named)"
        return engine.spec.peak_words(device)
    labels = Engine.MLX.spec.figure_labels if engine is None else engine.spec.figure_labels
    return labels.get(target, target)
