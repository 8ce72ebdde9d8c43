"""Which estimate a measured peak is held against, and by how much it covers it.

The one rule (`held_against`, each engine's `EngineSpec.formula_for`): a run that
emulated MLX-ROCm's in-flight queue is held against ROCm's formula (in-flight term
included) on any device; any other run against the formula of the device it ran on,
where the engine has one (the torch engine: CUDA and the CPU; MLX: ROCm, CUDA, Metal and
the CPU), else ROCm's. The launcher attaches that estimate to a result, the explorer
recomputes it for a past run, and both take it from the `Answer` of the run's question
(`core.answer.held_against`);
`vramscope calibrate` fits each run against the terms of the same formula, so `table`
and `calibrate` say the same of the same runs (a torch run on the CPU that emulated the
queue stands in for MLX on ROCm: both hold it against ROCm's formula with its budget).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.backend import Backend, backend_choice
from core.measurement.engine import Engine
from core.probes.device_nodes import detect_backend


def device_backend(device_kind: Backend | str) -> Backend | None:
    """The backend a device kind names (`cpu` -> Backend.CPU), or None for a name no
    backend has (a damaged or hand-edited record)."""
    try:
        return Backend.named(device_kind)
    except ValueError:
        return None


def held_against(engine: Engine, device_kind: Backend | str, *, emulated_queue: bool) -> Backend:
    """The estimate formula a peak of `engine` on `device_kind` (a Backend, or the name a
    record holds) is held against."""
    return engine.spec.formula_for(device_backend(device_kind), emulated_queue=emulated_queue)


def expected_backend(engine: Engine, device: str) -> Backend:
    """The formula a run will most likely be held against, decided before it starts (no
    runtime is imported): ROCm's for an engine that emulates its queue; else the device
    asked for, or for `auto` the machine's device nodes (a run that lands elsewhere is
    held against its own device's formula once it reports)."""
    if engine.spec.emulates_rocm_queue:
        return held_against(engine, device, emulated_queue=True)
    chosen = backend_choice(device)
    if chosen is None:
        return detect_backend().backend
    return held_against(engine, chosen, emulated_queue=False)


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
