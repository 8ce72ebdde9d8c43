"""Measuring a real load in a child process: vramscope's torch decoder engine, or
real MLX through mlx-lm (`MeasureRequest(engine=Engine.MLX)`), on one device or split
over ranks under `mlx.launch`.

This is the only way in for the UI and the scripts. Importing it is cheap and never
imports torch or mlx: the run starts `python -m hip_backend.child` (or `mlx.launch`
and its ranks), where an engine is imported inside functions.

One run API for both (a single-device run is a run of one rank):

    from core.measurement.request import MeasureRequest
    from hip_backend import prepare, prepare_parallel, start_run, measure

    handle = start_run(MeasureRequest("mlx-community/Qwen3-30B-A3B-4bit"), on_event)
    handle.cancel()        # kills every process; a CANCELLED failure ends the run
    handle.wait(timeout)   # MeasuredRun | MeasurementFailure | None (still running)
    outcome = measure(prepare_parallel(request, plan))   # the same, to the end

`on_event` gets the run's notices and progress, then one `RunEnded`; a finished run
goes to the history (hip_backend/run.py writes it) unless `record_history=False`.
The user's own command is the same kind of run, with the same handle:
`start_command(argv, finish, on_event)` (`vramscope run`, the explorer's `M`).
See docs/measuring.md.
"""

from __future__ import annotations

from core.measurement.engine import DEFAULT_ENGINE, Engine
from hip_backend.engines import is_installed, missing_engine
from hip_backend.errors import MeasureError
from hip_backend.external.record import external_peak
from hip_backend.external.run import CommandRun, check_command, run_command
from hip_backend.launcher import PreparedMeasurement, config_refusal, prepare
from hip_backend.model.random_weights import write_random_model
from hip_backend.ranks.hostfile import RingHostfile, read_hostfile
from hip_backend.ranks.launch import PreparedParallel, prepare_parallel, run_single
from hip_backend.run import RunHandle, measure, record_run, start_command, start_run


def is_available(engine: Engine | str = DEFAULT_ENGINE) -> bool:
    """True when the engine's runtime is installed for this interpreter (torch; or mlx
    and mlx-lm), checked without importing it."""
    return is_installed(Engine.named(engine))


__all__ = [
    "CommandRun",
    "MeasureError",
    "PreparedMeasurement",
    "PreparedParallel",
    "RingHostfile",
    "RunHandle",
    "check_command",
    "config_refusal",
    "external_peak",
    "is_available",
    "measure",
    "missing_engine",
    "prepare",
    "prepare_parallel",
    "read_hostfile",
    "record_run",
    "run_command",
    "run_single",
    "start_command",
    "start_run",
    "write_random_model",
]
