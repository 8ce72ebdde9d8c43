"""The calibrated estimate's form, its fit for coverage and its cross-validated figures.

    calibrated = s + ceil(s x margin)       s = max(0, W + 2 x K + I + fixed)

W, K and I are mlxcel's own weights, KV and in-flight terms for the workload. Weights
are held once (no per-byte factor: that is what overshoots on a 17 GB MoE), the KV
cache twice (mlx-lm grows it by concatenation, so the old and the grown buffer are
alive together at the last step), the in-flight budget once (the queue holds up to the
budget). Only the fixed part is fitted: the largest excess of a training peak over
those terms, so every training run is covered; the margin (1% of the total) is stated,
not fitted. docs/calibration.md shows why this form beat the others on held-out models.
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
"""The stated margin: every training peak is covered by at least 1% of itself."""
MIN_MODELS = 3
"""Fewer models than this and the fixed part would be fitted on too few shapes."""


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
    """Leave-one-model-out: each model's rows predicted by a fit on the other models."""

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


def row_prediction(row: CalibrationRow, fixed: int) -> int:
    """The calibrated total of one row's workload."""
    return predict(row.weights_bytes, row.kv_bytes, row.inflight_bytes, fixed)


def models_of(rows: Sequence[CalibrationRow]) -> tuple[str, ...]:
    """The distinct models of `rows`, sorted."""
    return tuple(sorted({r.model for r in rows}))


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
            "the fixed part would come from too few shapes to carry over to another model, "
            "and there would be no held-out model to check it on"
        )
    return models


def cross_validate(rows: Sequence[CalibrationRow]) -> CrossValidation:
    """Leave-one-model-out figures (needs at least 2 models)."""
    models = models_of(rows)
    estimates: list[int] = []
    peaks: list[int] = []
    mlxcel: list[int] = []
    for held in models:
        fixed = fit_fixed_bytes([r for r in rows if r.model != held])
        for r in rows:
            if r.model == held:
                estimates.append(row_prediction(r, fixed))
                peaks.append(r.peak_bytes)
                mlxcel.append(r.mlxcel_total_bytes)
    return CrossValidation(len(models), figures(estimates, peaks), figures(mlxcel, peaks))


@dataclass(frozen=True)
class Fit:
    """A fit on one set of rows: the fixed part, the training and held-out figures."""

    fixed_bytes: int
    models: tuple[str, ...]
    runs: int
    training: Figures
    training_mlxcel: Figures
    cross_validated: CrossValidation


def fit_rows(rows: Sequence[CalibrationRow]) -> Fit:
    """Fit the fixed part on every row; CalibrationRefused with fewer than 3 models."""
    models = check_enough(rows)
    fixed = fit_fixed_bytes(rows)
    peaks = [r.peak_bytes for r in rows]
    return Fit(
        fixed_bytes=fixed,
        models=models,
        runs=len(rows),
        training=figures([row_prediction(r, fixed) for r in rows], peaks),
        training_mlxcel=figures([r.mlxcel_total_bytes for r in rows], peaks),
        cross_validated=cross_validate(rows),
    )
