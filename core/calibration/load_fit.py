"""vramscope's load calibrated on measured peaks: its transient scaled, a fixed part added.

    calibrated = W + KV + I + ceil(T x scale) + fixed

W, KV, I and T are the mlx-lm load's weights, caches, in-flight reserve and prefill
transient (`core.load`) for the run's prompt and generated tokens. The transient's
coefficients were fitted to CPU peaks; a backend's own buffers differ (a fused
attention holds no scores, a GPU runtime holds buffers of its own), so per engine,
backend and device two numbers are fitted, for coverage: for each `scale` on a grid of
quarters from 0 to 4, the fixed part is the largest excess of a training peak over the
scaled load (so every training run is covered), and the scale kept is the one whose
training overshoot is least in sum. Held out, leave-one-model-out: each model's runs
are predicted by a scale and fixed part fitted on the other models only.

The same fit runs on mlxcel's 18 published peaks (`builtin.builtin_load_fit`) and on the
user's own runs, per engine, backend and device (`vramscope calibrate`,
`fit_load_workloads`: each workload's terms once, its peaks beside them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.calibration.fit import (
    CROSS_VALIDATION_MODELS,
    CalibrationRefused,
    Figures,
    workload_figures,
)
from core.calibration.rows import LoadTerms

if TYPE_CHECKING:
    from core.load.load import EngineLoad

SCALE_STEPS = tuple(range(0, 401, 25))
"""The transient's scales tried, in hundredths (0 to 4 in quarters)."""


LoadWorkload = tuple[LoadTerms, Sequence[int]]
"""A workload's load terms and its runs' peaks, ascending (never empty)."""


@dataclass(frozen=True)
class LoadRun:
    """One measured run with the load's terms for its workload (bytes)."""

    model: str
    weights_bytes: int
    kv_bytes: int
    inflight_bytes: int
    transient_bytes: int
    """The prefill transient, the in-flight reserve not included."""
    peak_bytes: int
    mlxcel_total_bytes: int
    """mlxcel's estimate of the same run, for the figures beside it."""

    @property
    def terms(self) -> LoadTerms:
        return LoadTerms(
            self.model,
            self.weights_bytes,
            self.kv_bytes,
            self.inflight_bytes,
            self.transient_bytes,
            self.mlxcel_total_bytes,
        )


@dataclass(frozen=True)
class LoadFit:
    """The fitted scale and fixed part, and how the load does with and without them."""

    scale_percent: int
    fixed_bytes: int
    models: tuple[str, ...]
    training: Figures
    uncalibrated: Figures
    """The load as `core.load` gives it, on the same runs."""
    mlxcel: Figures
    held_out: Figures | None
    """Leave-one-model-out (None under 3 models)."""

    @property
    def runs(self) -> int:
        """The runs it was fitted on."""
        return self.training.rows

    def total_bytes(self, terms: LoadTerms | LoadRun) -> int:
        """The calibrated load of a workload whose load terms are given."""
        return predict(terms, self.scale_percent, self.fixed_bytes)


def predict(run: LoadTerms | LoadRun, scale_percent: int, fixed: int) -> int:
    scaled = -(-run.transient_bytes * scale_percent // 100)
    return max(0, run.weights_bytes + run.kv_bytes + run.inflight_bytes + scaled + fixed)


_SUMMED_RUNS = 256
"""Runs of a workload past which its overshoots are summed as estimate x sum(1 / peak):
a 10^6-run file costs a division per workload and scale, not per run."""


@dataclass(frozen=True, slots=True)
class _Runs:
    """A workload's load terms and peaks, with what every scale's sum needs read once."""

    terms: LoadTerms
    peaks: Sequence[int]
    inverse_sum: float | None
    """sum(1 / peak) for a workload of many runs (None: each run is summed)."""

    @classmethod
    def of(cls, terms: LoadTerms, peaks: Sequence[int]) -> _Runs:
        many = len(peaks) > _SUMMED_RUNS
        return cls(terms, peaks, sum(1 / p for p in peaks) if many else None)

    def overshoot_sum(self, estimate: int) -> float:
        if self.inverse_sum is not None:
            return estimate * self.inverse_sum - len(self.peaks)
        return sum(estimate / p - 1 for p in self.peaks)


def _fit(workloads: Sequence[_Runs]) -> tuple[int, int]:
    """(scale, fixed) covering every run with the least summed overshoot (the fixed part
    depends on each workload's highest peak only)."""
    best: tuple[float, int, int] | None = None
    for scale in SCALE_STEPS:
        fixed = max(w.peaks[-1] - predict(w.terms, scale, 0) for w in workloads)
        over = sum(w.overshoot_sum(predict(w.terms, scale, fixed)) for w in workloads)
        if best is None or over < best[0]:
            best = (over, scale, fixed)
    assert best is not None
    return best[1], best[2]


def fit_load(runs: Sequence[LoadRun]) -> LoadFit:
    """`fit_load_workloads` of runs given one by one (a workload each)."""
    return fit_load_workloads([(r.terms, (r.peak_bytes,)) for r in runs])


def fit_load_workloads(workloads: Sequence[LoadWorkload]) -> LoadFit:
    """Fit on every run and hold each model out once; CalibrationRefused with fewer
    than 2 models (no run could be predicted from another model's)."""
    models = tuple(dict.fromkeys(t.model for t, _ in workloads))
    if len(models) < 2:
        raise CalibrationRefused("the load's calibration needs runs of at least 2 models")
    prepared = [_Runs.of(t, p) for t, p in workloads]
    scale, fixed = _fit(prepared)
    held_out = None
    if len(models) >= CROSS_VALIDATION_MODELS:
        estimated: list[tuple[int, Sequence[int]]] = []
        for held in models:
            s, f = _fit([w for w in prepared if w.terms.model != held])
            estimated += [(predict(t, s, f), p) for t, p in workloads if t.model == held]
        held_out = workload_figures(estimated)
    return LoadFit(
        scale_percent=scale,
        fixed_bytes=fixed,
        models=models,
        training=workload_figures((predict(t, scale, fixed), p) for t, p in workloads),
        uncalibrated=workload_figures((t.load_bytes, p) for t, p in workloads),
        mlxcel=workload_figures((t.mlxcel_total_bytes, p) for t, p in workloads),
        held_out=held_out,
    )


def terms_of_load(model: str, load: EngineLoad, mlxcel_total_bytes: int) -> LoadTerms:
    """The terms the fit scales, from mlx-lm's load of one workload."""
    from core.load.load import TermKind

    return LoadTerms(
        model,
        load.weights_bytes,
        load.kv_bytes,
        load.bytes_of(TermKind.INFLIGHT),
        load.bytes_of(TermKind.TRANSIENT),
        mlxcel_total_bytes,
    )
