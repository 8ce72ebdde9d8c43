"""The calibrated estimate's form, its fit for coverage and its cross-validated figures.

    calibrated = s + ceil(s x margin)       s = max(0, W + 2 x K + I + fixed)

W, K and I are mlxcel's own weights, KV and in-flight terms for the workload. Weights
are held once (no per-byte factor: that is what overshoots on a 17 GB MoE), the KV
cache twice (mlx-lm grows it by concatenation, so the old and the grown buffer are
alive together at the last step), the in-flight budget once (the queue holds up to the
budget). Two numbers are fitted, each for coverage:

- the fixed part: the largest excess of a training peak over those terms, so every
  training run is covered;
- the margin: what it takes to cover the runs of each model when the fixed part is
  fitted on the other models only (leave-one-model-out), at least 1%. A training run
  is covered by the fixed part alone; the margin is for the shapes not measured.

The held-out figures are of that whole procedure: each model's runs are predicted by a
fixed part and a margin chosen on the other models only (so a fit needs 3 models to be
cross-validated; with 2 it is fitted and said not to be). docs/calibration.md shows why
this form beat the others on held-out models.
"""

from __future__ import annotations

import statistics
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.calibration.rows import CalibrationRow, RunTerms, WorkloadRuns, workloads_of_rows
from core.errors import VramscopeError
from core.units import U64_MAX

KV_FACTOR = 2
"""How many KV caches are alive at the peak (mlx-lm's grow-by-concatenation step)."""
MARGIN_BASIS_POINTS = 100
"""The smallest margin: every peak is covered by at least 1% of the total (and what
calibrations saved before the margin was chosen used)."""
MAX_MARGIN_BASIS_POINTS = 10_000
"""A margin is at most 100%: a miss larger than that is reported, not covered."""
MIN_MODELS = 2
"""Fewer models than this and no model's runs can be predicted from another's."""
CROSS_VALIDATION_MODELS = 3
"""Fewer and the margin is chosen on the only held-out runs there are: no model is left
to check the fit on."""


class CalibrationRefused(VramscopeError):
    """The rows cannot support a calibration; the message says why."""


@dataclass(frozen=True)
class Figures:
    """How an estimate does against a set of peaks (overshoot = estimate / peak - 1)."""

    rows: int
    covered: int
    """Rows whose estimate is at least the peak."""
    median_overshoot: float
    """Median of (estimate - peak) / peak, as a fraction (0.076 = 7.6%)."""
    worst_overshoot: float
    """The largest overshoot: the most memory an estimate wastes."""
    least_overshoot: float
    """The smallest overshoot; negative when some peak is not covered."""


@dataclass(frozen=True)
class CrossValidation:
    """Leave-one-model-out: each model's rows predicted by a fixed part and a margin
    chosen on the other models only."""

    folds: int
    vramscope: Figures
    mlxcel: Figures
    """mlxcel's estimate on the same rows."""


def figures(estimates: Sequence[int], peaks: Sequence[int]) -> Figures:
    """Coverage and overshoot of `estimates` against `peaks` (same order, peaks > 0)."""
    return workload_figures((e, (p,)) for e, p in zip(estimates, peaks, strict=True))


def workload_figures(estimated: Iterable[tuple[int, Sequence[int]]]) -> Figures:
    """`figures` of runs given as (an estimate, the ascending peaks it is held against),
    with the very same floats. A run's overshoot (estimate / peak - 1) only falls as its
    peak grows, so each workload's lowest and highest peak give its extremes, and where
    workloads have many runs the median is found by counting, per workload, the peaks
    whose overshoot is at most a value: a 10^6-run fit holds no float per run."""
    spans = [_Span(e, peaks, e / peaks[-1] - 1.0, e / peaks[0] - 1.0) for e, peaks in estimated]
    n = sum(len(s.peaks) for s in spans)
    least = min((s.least for s in spans), default=0.0)
    worst = max((s.worst for s in spans), default=0.0)
    if n <= len(spans) * _COUNTED_RUNS:  # few runs a workload: a float each costs less
        over = [s.estimate / p - 1.0 for s in spans for p in s.peaks]
        median = statistics.median(over)  # StatisticsError for no runs, as `figures` did
    else:
        upper = _kth_overshoot(spans, n // 2, least, worst)
        # statistics.median's own arithmetic on the sorted overshoots
        median = upper if n % 2 else (_kth_overshoot(spans, n // 2 - 1, least, upper) + upper) / 2
    return Figures(
        rows=n,
        covered=sum(bisect_right(s.peaks, s.estimate) for s in spans),  # peaks <= estimate
        median_overshoot=median,
        worst_overshoot=worst,
        least_overshoot=least,
    )


_COUNTED_RUNS = 256
"""Runs a workload from which the median is counted rather than sorted: counting takes
up to 64 bisections of every workload, sorting a float per run."""


@dataclass(frozen=True, slots=True)
class _Span:
    """One workload's runs against one estimate: their overshoots lie in [least, worst]."""

    estimate: int
    peaks: Sequence[int]
    least: float
    worst: float

    def at_most(self, x: float) -> int:
        """How many of the runs overshoot by at most `x`."""
        if x >= self.worst:
            return len(self.peaks)
        if x < self.least:
            return 0
        e = self.estimate
        return len(self.peaks) - bisect_left(self.peaks, True, key=lambda p: e / p - 1.0 <= x)


def _kth_overshoot(spans: Sequence[_Span], k: int, low: float, high: float) -> float:
    """The k-th smallest overshoot (from 0), known to lie in [low, high]: the least float
    at or under which more than k runs overshoot, found by bisecting the floats' order
    (at most 64 steps, each a bisection of every workload's peaks)."""
    lo, hi = _float_order(low), _float_order(high)
    while lo < hi:
        mid = (lo + hi) // 2
        if sum(s.at_most(_float_at(mid)) for s in spans) > k:
            hi = mid
        else:
            lo = mid + 1
    return _float_at(lo)


_SIGN = 1 << 63


def _float_order(x: float) -> int:
    """An integer for each float, in the floats' order (-0.0 just below 0.0)."""
    bits = int.from_bytes(struct.pack("<d", x), "little")
    return bits if bits < _SIGN else _SIGN - 1 - bits


def _float_at(order: int) -> float:
    """The float of `_float_order`."""
    bits = order if order >= 0 else _SIGN - 1 - order
    (x,) = struct.unpack("<d", bits.to_bytes(8, "little"))
    return float(x)


def base_bytes(weights: int, kv: int, inflight: int) -> int:
    """The terms the form counts before the fixed part: W + 2 K + I."""
    return weights + KV_FACTOR * kv + inflight


def predict(
    weights: int, kv: int, inflight: int, fixed: int, margin_bp: int = MARGIN_BASIS_POINTS
) -> int:
    """The calibrated total in bytes (integer arithmetic, saturating at 2^64 - 1)."""
    s = max(0, base_bytes(weights, kv, inflight) + fixed)
    return min(s + -(-s * margin_bp // 10_000), U64_MAX)


def _base(t: RunTerms) -> int:
    return base_bytes(t.weights_bytes, t.kv_bytes, t.inflight_bytes)


def _prediction(t: RunTerms, fixed: int, margin_bp: int) -> int:
    return predict(t.weights_bytes, t.kv_bytes, t.inflight_bytes, fixed, margin_bp)


def fit_fixed_bytes(rows: Sequence[CalibrationRow]) -> int:
    """The fixed part: the largest excess of a peak over W + 2 K + I (may be negative)."""
    return max(r.peak_bytes - _base(r.terms) for r in rows)


def _fixed_part(workloads: Sequence[WorkloadRuns]) -> int:
    """`fit_fixed_bytes` of the workloads' runs: only each one's highest peak counts."""
    return max(w.highest - _base(w.terms) for w in workloads)


def row_prediction(row: CalibrationRow, fixed: int, margin_bp: int = MARGIN_BASIS_POINTS) -> int:
    """The calibrated total of one row's workload."""
    return _prediction(row.terms, fixed, margin_bp)


def covering_margin(row: CalibrationRow, fixed: int) -> int:
    """The smallest margin in basis points under which `fixed` covers the row (0 when the
    fixed part alone does; MAX_MARGIN_BASIS_POINTS when no margin up to 100% would)."""
    return _covering(row.terms, row.peak_bytes, fixed)


def _covering(terms: RunTerms, peak: int, fixed: int) -> int:
    s = max(0, _base(terms) + fixed)
    if s >= peak:
        return 0
    if s == 0:
        return MAX_MARGIN_BASIS_POINTS
    # s + ceil(s x bp / 10^4) >= peak  <=>  s x bp > (peak - s - 1) x 10^4
    return min((peak - s - 1) * 10_000 // s + 1, MAX_MARGIN_BASIS_POINTS)


def models_of(rows: Iterable[CalibrationRow | WorkloadRuns]) -> tuple[str, ...]:
    """The distinct models of `rows` (or workloads), sorted."""
    return tuple(sorted({r.terms.model for r in rows}))


def largest_miss(rows: Sequence[CalibrationRow]) -> int:
    """The margin, in basis points, that covers every model's runs predicted by a fixed
    part fitted on the other models (needs at least 2 models; may be 0)."""
    return _largest_miss(workloads_of_rows(rows))


def _largest_miss(workloads: Sequence[WorkloadRuns]) -> int:
    # the fixed part and every covering margin only grow with a workload's peak: each
    # workload's highest is all that counts
    needed = 0
    for held in models_of(workloads):
        fixed = _fixed_part([w for w in workloads if w.terms.model != held])
        for w in workloads:
            if w.terms.model == held:
                needed = max(needed, _covering(w.terms, w.highest, fixed))
    return needed


def chosen_margin(rows: Sequence[CalibrationRow]) -> int:
    """The margin of a fit on `rows`: the largest leave-one-model-out miss, at least 1%."""
    return _chosen_margin(workloads_of_rows(rows))


def _chosen_margin(workloads: Sequence[WorkloadRuns]) -> int:
    return max(MARGIN_BASIS_POINTS, _largest_miss(workloads))


def check_enough(rows: Sequence[CalibrationRow]) -> tuple[str, ...]:
    """The models of `rows`; CalibrationRefused when they are too few to fit on."""
    bad = [r for r in rows if r.peak_bytes <= 0]
    if bad:
        raise _not_a_run(bad[0].model, bad[0].peak_bytes)
    return _enough_models(models_of(rows))


def _check_workloads(workloads: Sequence[WorkloadRuns]) -> tuple[str, ...]:
    bad = [w for w in workloads if w.peaks[0] <= 0]  # the lowest: peaks are ascending
    if bad:
        raise _not_a_run(bad[0].terms.model, bad[0].peaks[0])
    return _enough_models(models_of(workloads))


def _not_a_run(model: str, peak: int) -> CalibrationRefused:
    return CalibrationRefused(f"{model}: a peak of {peak} bytes is not a run")


def _enough_models(models: tuple[str, ...]) -> tuple[str, ...]:
    if len(models) < MIN_MODELS:
        named = ", ".join(models) if models else "none"
        raise CalibrationRefused(
            f"needs runs of at least {MIN_MODELS} models, got {len(models)} ({named}): "
            "the margin is chosen by predicting one model's runs from another model's, "
            "and a fixed part fitted on one model's shapes says nothing about another's"
        )
    return models


def cross_validate(rows: Sequence[CalibrationRow]) -> CrossValidation:
    """Leave-one-model-out figures of the whole fit (needs at least 3 models): each
    model's rows predicted by the fixed part and the margin of a fit on the others."""
    workloads = workloads_of_rows(rows)
    return _cross_validate(workloads, _mlxcel_figures(workloads))


def _mlxcel_figures(workloads: Sequence[WorkloadRuns]) -> Figures:
    return workload_figures((w.terms.mlxcel_total_bytes, w.peaks) for w in workloads)


def _cross_validate(workloads: Sequence[WorkloadRuns], mlxcel: Figures) -> CrossValidation:
    """`cross_validate`, given mlxcel's figures on the same runs: every run is held out
    once, and mlxcel is not fitted, so its held-out figures are its training figures."""
    models = models_of(workloads)
    if len(models) < CROSS_VALIDATION_MODELS:
        raise CalibrationRefused(
            f"cross-validation needs runs of at least {CROSS_VALIDATION_MODELS} models"
        )
    estimated: list[tuple[int, Sequence[int]]] = []
    for held in models:
        rest = [w for w in workloads if w.terms.model != held]
        fixed, margin = _fixed_part(rest), _chosen_margin(rest)
        estimated.extend(
            (_prediction(w.terms, fixed, margin), w.peaks)
            for w in workloads
            if w.terms.model == held
        )
    return CrossValidation(len(models), workload_figures(estimated), mlxcel)


@dataclass(frozen=True)
class Fit:
    """A fit on one set of rows: the fixed part, the margin, the training and held-out
    figures."""

    fixed_bytes: int
    margin_basis_points: int
    """The largest leave-one-model-out miss, at least 1% (`chosen_margin`)."""
    models: tuple[str, ...]
    runs: int
    training: Figures
    training_mlxcel: Figures
    """mlxcel's estimate on the same runs (the figures `table` shows for them)."""
    cross_validated: CrossValidation | None
    """None with runs of only 2 models (`not_cross_validated` says why)."""

    @property
    def not_cross_validated(self) -> str | None:
        """Why the fit has no held-out figures, or None when it has them."""
        if self.cross_validated is not None:
            return None
        return (
            f"not cross-validated: runs of {len(self.models)} models, and "
            f"leave-one-model-out needs {CROSS_VALIDATION_MODELS} (the margin is chosen "
            "by predicting each model's runs from the other's, so no model is left to "
            "check the fit on); measure another model to cross-validate it"
        )


def fit_rows(rows: Sequence[CalibrationRow]) -> Fit:
    """Fit the fixed part on every row and the margin on the leave-one-model-out misses;
    CalibrationRefused with fewer than 2 models."""
    check_enough(rows)  # before grouping: it names the first run that is not one
    return fit_workloads(workloads_of_rows(rows))


def fit_workloads(workloads: Sequence[WorkloadRuns]) -> Fit:
    """`fit_rows` of the runs of `workloads`."""
    models = _check_workloads(workloads)
    fixed = _fixed_part(workloads)
    margin = _chosen_margin(workloads)
    mlxcel = _mlxcel_figures(workloads)
    return Fit(
        fixed_bytes=fixed,
        margin_basis_points=margin,
        models=models,
        runs=sum(w.runs for w in workloads),
        training=workload_figures(
            (_prediction(w.terms, fixed, margin), w.peaks) for w in workloads
        ),
        training_mlxcel=mlxcel,
        cross_validated=(
            _cross_validate(workloads, mlxcel) if len(models) >= CROSS_VALIDATION_MODELS else None
        ),
    )
