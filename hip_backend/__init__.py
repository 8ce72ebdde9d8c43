"""Measuring a real load in a child process: vramscope's torch decoder engine, or
real MLX through mlx-lm (`MeasureRequest(engine=Engine.MLX)`), on one device or split
over ranks under `mlx.launch`.

This is the only way in for the UI and the scripts. Importing it is cheap and never
imports torch or mlx: the launcher below starts `python -m hip_backend.child` (or
`mlx.launch` and its ranks), where an engine is imported inside functions.

    from core.measurement.request import MeasureRequest
    from hip_backend import start_measurement, measure

    handle = start_measurement(MeasureRequest("mlx-community/Qwen3-30B-A3B-4bit"), on_event)
    handle.cancel()        # kills the child; a CANCELLED failure event follows
    handle.wait(timeout)   # MeasuredPeak | MeasurementFailure | None

See docs/measuring.md.
"""

from __future__ import annotations

from core.measurement.engine import DEFAULT_ENGINE, Engine
from hip_backend.engines import is_installed
from hip_backend.errors import MeasureError
from hip_backend.launcher import (
    MeasurementHandle,
    PreparedMeasurement,
    config_refusal,
    measure,
    prepare,
    record_peaks,
    start_measurement,
)
from hip_backend.model.random_weights import write_random_model
from hip_backend.ranks.hostfile import RingHostfile, read_hostfile
from hip_backend.ranks.launch import (
    ParallelHandle,
    ParallelOutcome,
    ParallelRun,
    PreparedParallel,
    prepare_parallel,
    run_parallel,
    run_single,
)


def is_available(engine: Engine | str = DEFAULT_ENGINE) -> bool:
    """True when the engine's runtime is installed for this interpreter (torch; or mlx
    and mlx-lm), checked without importing it."""
    return is_installed(Engine.named(engine))


__all__ = [
    "MeasureError",
    "MeasurementHandle",
    "ParallelHandle",
    "ParallelOutcome",
    "ParallelRun",
    "PreparedMeasurement",
    "PreparedParallel",
    "RingHostfile",
    "config_refusal",
    "is_available",
    "measure",
    "prepare",
    "prepare_parallel",
    "read_hostfile",
    "record_peaks",
    "run_parallel",
    "run_single",
    "start_measurement",
    "write_random_model",
]
