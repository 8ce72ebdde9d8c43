"""Measuring a real load in a child process: vramscope's torch decoder engine, or
real MLX through mlx-lm (`MeasureRequest(engine="mlx")`, hip_backend/mlx_engine/child.py).

Importing this package is cheap and never imports torch or mlx: the launcher API
below starts `python -m hip_backend.child`, where they are imported inside functions.

    from core.measurement.request import MeasureRequest
    from hip_backend import start_measurement, measure

    handle = start_measurement(MeasureRequest("mlx-community/Qwen3-30B-A3B-4bit"), on_event)
    handle.cancel()        # kills the child; a CANCELLED failure event follows
    handle.wait(timeout)   # MeasuredPeak | MeasurementFailure | None

See docs/measuring.md.
"""

from __future__ import annotations

import importlib.util

from hip_backend.launcher import (
    MeasurementHandle,
    PreparedMeasurement,
    measure,
    prepare,
    start_measurement,
)


def is_available(engine: str = "torch") -> bool:
    """True when the engine's runtime is installed for this interpreter (torch; or mlx
    and mlx-lm), checked without importing it."""
    if engine == "mlx":
        return all(importlib.util.find_spec(name) is not None for name in ("mlx", "mlx_lm"))
    return importlib.util.find_spec("torch") is not None


__all__ = [
    "MeasurementHandle",
    "PreparedMeasurement",
    "is_available",
    "measure",
    "prepare",
    "start_measurement",
]
