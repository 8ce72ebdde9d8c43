"""Measuring a real load: a small torch decoder engine run in a child process.

Importing this package is cheap and never imports torch: the launcher API below
starts `python -m hip_backend.child`, where torch is imported inside functions.

    from core.measurement import MeasureRequest
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


def is_available() -> bool:
    """True when torch is installed for this interpreter (checked without importing it)."""
    return importlib.util.find_spec("torch") is not None


__all__ = [
    "MeasurementHandle",
    "PreparedMeasurement",
    "is_available",
    "measure",
    "prepare",
    "start_measurement",
]
