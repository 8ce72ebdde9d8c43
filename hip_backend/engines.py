"""The engines hip_backend runs, one line each: the package that measures in the child,
and what its runtime needs.

Each engine's package exports `measure(job, emit, progress) -> MeasuredPeak`, the run
inside `python -m hip_backend.child`; it is imported by name, in the child only, so
the parent (and `import hip_backend`) never loads an engine. What core knows of an
engine (its label, options, formula and result fields) is its
`core.measurement.engine.EngineSpec`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.measurement.engine import Engine
from core.measurement.result import FailureKind, MeasurementFailure

if TYPE_CHECKING:
    from core.measurement.protocol import MeasureEvent
    from core.measurement.result import MeasuredPeak
    from hip_backend.job import ChildJob

Emit = Callable[["MeasureEvent"], None]
Progress = Callable[[str, int, int], None]
EngineMeasure = Callable[["ChildJob", Emit, Progress], "MeasuredPeak"]
"""An engine package's `measure`: run the job and return its peak (raises MeasureError
and the engine's own errors; `hip_backend.child` types whatever escapes)."""


@dataclass(frozen=True)
class EngineRuntime:
    """How hip_backend runs one engine."""

    package: str
    """The subpackage whose `measure` runs a job in the child."""
    requires: tuple[str, ...]
    """The modules its runtime imports (`is_available` finds them without importing)."""
    extra: str
    """The pip extra that installs them: `pip install 'vramscope[EXTRA]'`."""
    missing: FailureKind
    """The failure when they are not installed."""
    budget_from_env: bool = False
    """Its runtime reads the in-flight budget from `MLX_ROCM_MAX_INFLIGHT_MB` itself, so
    an explicit budget is handed to the child in that variable."""


ENGINES: dict[Engine, EngineRuntime] = {
    Engine.TORCH: EngineRuntime(
        "hip_backend.torch_engine", ("torch",), "measure", FailureKind.NO_TORCH
    ),
    Engine.MLX: EngineRuntime(
        "hip_backend.mlx_engine", ("mlx", "mlx_lm"), "mlx", FailureKind.NO_MLX, budget_from_env=True
    ),
}


def runtime(engine: Engine) -> EngineRuntime:
    """How hip_backend runs `engine`."""
    return ENGINES[engine]


def module_found(name: str) -> bool:
    """True when `name` is installed for this interpreter (found, not imported): an
    engine whose import then fails is installed but failed to load, not missing."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken parent package, a module without a spec
        return False


def is_installed(engine: Engine) -> bool:
    """True when the engine's runtime is installed for this interpreter (checked without
    importing it)."""
    return all(module_found(name) for name in ENGINES[engine].requires)


def install_hint(engine: Engine) -> str:
    """The command that installs the engine's runtime."""
    return f"pip install 'vramscope[{ENGINES[engine].extra}]'"


def missing_engine(engine: Engine) -> MeasurementFailure | None:
    """The failure to report before starting a run when the engine's runtime is not
    installed for this interpreter (the one the measuring child runs), else None."""
    missing = [name for name in ENGINES[engine].requires if not module_found(name)]
    if not missing:
        return None
    names = " and ".join(name.replace("_", "-") for name in missing)
    return MeasurementFailure(
        ENGINES[engine].missing,
        f"{names} not found by {sys.executable}; install the {engine.value} engine with: "
        f"{install_hint(engine)}",
    )


def engine_measure(engine: Engine) -> EngineMeasure:
    """The engine's `measure` (imports its package: the child's business)."""
    measure: EngineMeasure = importlib.import_module(ENGINES[engine].package).measure
    return measure
