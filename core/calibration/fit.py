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
from collections.abc import Sequence
from dataclasses import dataclass

from core.calibration.rows import CalibrationRow
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
    over = [e / p - 1.0 for e, p in zip(estimates, peaks, strict=True)]
    return Figures(
        rows=len(over),
        covered=sum(1 for e, p in zip(estimates, peaks, strict=True) if e >= p),
        median_overshoot=statistics.median(over),
        worst_overshoot=max(over),
        least_overshoot=min(over),
    )


def base_bytes(weights: int, kv: int, inflight: int) -> int:
    """The terms the form counts before the fixed part: W + 2 K + I."""
    return weights + KV_FACTOR * kv + inflight


def predict(
    weights: int, kv: int, inflight: int, fixed: int, margin_bp: int = MARGIN_BASIS_POINTS
) -> int:
    """The calibrated total in bytes (integer arithmetic, saturating at 2^64 - 1)."""
    s = max(0, base_bytes(weights, kv, inflight) + fixed)
    return min(s + -(-s * margin_bp // 10_000), U64_MAX)


def fit_fixed_bytes(rows: Sequence[CalibrationRow]) -> int:
    """The fixed part: the largest excess of a peak over W + 2 K + I (may be negative)."""
    return max(
        r.peak_bytes - base_bytes(r.weights_bytes, r.kv_bytes, r.inflight_bytes) for r in rows
    )


def row_prediction(row: CalibrationRow, fixed: int, margin_bp: int = MARGIN_BASIS_POINTS) -> int:
    """The calibrated total of one row's workload."""
    return predict(row.weights_bytes, row.kv_bytes, row.inflight_bytes, fixed, margin_bp)


def covering_margin(row: CalibrationRow, fixed: int) -> int:
    """The smallest margin in basis points under which `fixed` covers the row (0 when the
    fixed part alone does; MAX_MARGIN_BASIS_POINTS when no margin up to 100% would)."""
    s = max(0, base_bytes(row.weights_bytes, row.kv_bytes, row.inflight_bytes) + fixed)
    if s >= row.peak_bytes:
        return 0
    if s == 0:
        return MAX_MARGIN_BASIS_POINTS
    # s + ceil(s x bp / 10^4) >= peak  <=>  s x bp > (peak - s - 1) x 10^4
    return min((row.peak_bytes - s - 1) * 10_000 // s + 1, MAX_MARGIN_BASIS_POINTS)


def models_of(rows: Sequence[CalibrationRow]) -> tuple[str, ...]:
    """The distinct models of `rows`, sorted."""
    return tuple(sorted({r.model for r in rows}))


def highest_peaks(rows: Sequence[CalibrationRow]) -> list[CalibrationRow]:
    """One row per workload, the one with its highest peak: the fixed part and every
    covering margin depend on nothing else (both only grow with a workload's peak), so a
    10^6-run file with a few thousand workloads is fitted on those."""
    best: dict[int, CalibrationRow] = {}
    for r in rows:
        key = id(r.terms)  # rows of one workload share its terms
        kept = best.get(key)
        if kept is None or r.peak_bytes > kept.peak_bytes:
            best[key] = r
    return list(best.values())


def predictions(rows: Sequence[CalibrationRow], fixed: int, margin_bp: int) -> list[int]:
    """Each row's calibrated total (computed once per workload)."""
    by_terms: dict[int, int] = {}
    out = []
    for r in rows:
        key = id(r.terms)
        total = by_terms.get(key)
        if total is None:
            total = by_terms[key] = row_prediction(r, fixed, margin_bp)
        out.append(total)
    return out


def largest_miss(rows: Sequence[CalibrationRow]) -> int:
    """The margin, in basis points, that covers every model's runs predicted by a fixed
    part fitted on the other models (needs at least 2 models; may be 0)."""
    needed = 0
    rows = highest_peaks(rows)
    for held in models_of(rows):
        fixed = fit_fixed_bytes([r for r in rows if r.model != held])
        for r in rows:
            if r.model == held:
                needed = max(needed, covering_margin(r, fixed))
    return needed


def chosen_margin(rows: Sequence[CalibrationRow]) -> int:
    """The margin of a fit on `rows`: the largest leave-one-model-out miss, at least 1%."""
    return max(MARGIN_BASIS_POINTS, largest_miss(rows))


def check_enough(rows: Sequence[CalibrationRow]) -> tuple[str, ...]:
    """The models of `rows`; CalibrationRefused when they are too few to fit on."""
    bad = [r for r in rows if r.peak_bytes <= 0]
    if bad:
        raise CalibrationRefused(
            f"{bad[0].model}: a peak of {bad[0].peak_bytes} bytes is not a run"
        )
    models = models_of(rows)
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
    models = models_of(rows)
    if len(models) < CROSS_VALIDATION_MODELS:
        raise CalibrationRefused(
            f"cross-validation needs runs of at least {CROSS_VALIDATION_MODELS} models"
        )
    estimates: list[int] = []
    peaks: list[int] = []
    mlxcel: list[int] = []
    highest = highest_peaks(rows)
    for held in models:
        rest = [r for r in highest if r.model != held]
        fixed, margin = fit_fixed_bytes(rest), chosen_margin(rest)
        held_rows = [r for r in rows if r.model == held]
        estimates.extend(predictions(held_rows, fixed, margin))
        peaks.extend(r.peak_bytes for r in held_rows)
        mlxcel.extend(r.mlxcel_total_bytes for r in held_rows)
    return CrossValidation(len(models), figures(estimates, peaks), figures(mlxcel, peaks))


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
    models = check_enough(rows)
    highest = highest_peaks(rows)
    fixed = fit_fixed_bytes(highest)
    margin = chosen_margin(highest)
    peaks = [r.peak_bytes for r in rows]
    return Fit(
        fixed_bytes=fixed,
        margin_basis_points=margin,
        models=models,
        runs=len(rows),
        training=figures(predictions(rows, fixed, margin), peaks),
        training_mlxcel=figures([r.mlxcel_total_bytes for r in rows], peaks),
        cross_validated=(cross_validate(rows) if len(models) >= CROSS_VALIDATION_MODELS else None),
    )
