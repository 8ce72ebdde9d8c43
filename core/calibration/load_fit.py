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
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from core.calibration.fit import CROSS_VALIDATION_MODELS, CalibrationRefused, Figures, figures

SCALE_STEPS = tuple(range(0, 401, 25))
"""The transient's scales tried, in hundredths (0 to 4 in quarters)."""


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
    def load_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.inflight_bytes + self.transient_bytes


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


def predict(run: LoadRun, scale_percent: int, fixed: int) -> int:
    scaled = -(-run.transient_bytes * scale_percent // 100)
    return max(0, run.weights_bytes + run.kv_bytes + run.inflight_bytes + scaled + fixed)


def _fit(runs: Sequence[LoadRun]) -> tuple[int, int]:
    """(scale, fixed) covering every run with the least summed overshoot."""
    best: tuple[float, int, int] | None = None
    for scale in SCALE_STEPS:
        fixed = max(r.peak_bytes - predict(r, scale, 0) for r in runs)
        over = sum(predict(r, scale, fixed) / r.peak_bytes - 1 for r in runs)
        if best is None or over < best[0]:
            best = (over, scale, fixed)
    assert best is not None
    return best[1], best[2]


def fit_load(runs: Sequence[LoadRun]) -> LoadFit:
    """Fit on every run and hold each model out once; CalibrationRefused with fewer
    than 2 models (no run could be predicted from another model's)."""
    models = tuple(dict.fromkeys(r.model for r in runs))
    if len(models) < 2:
        raise CalibrationRefused("the load's calibration needs runs of at least 2 models")
    scale, fixed = _fit(runs)
    peaks = [r.peak_bytes for r in runs]
    held_out = None
    if len(models) >= CROSS_VALIDATION_MODELS:
        estimated, held_peaks = [], []
        for held in models:
            s, f = _fit([r for r in runs if r.model != held])
            for r in runs:
                if r.model == held:
                    estimated.append(predict(r, s, f))
                    held_peaks.append(r.peak_bytes)
        held_out = figures(estimated, held_peaks)
    return LoadFit(
        scale_percent=scale,
        fixed_bytes=fixed,
        models=models,
        training=figures([predict(r, scale, fixed) for r in runs], peaks),
        uncalibrated=figures([r.load_bytes for r in runs], peaks),
        mlxcel=figures([r.mlxcel_total_bytes for r in runs], peaks),
        held_out=held_out,
    )


BUILTIN_GEN_TOKENS = 128
"""mlxcel's bench generated 128 tokens after `context - 128` prompt tokens."""


@cache
def builtin_load_runs() -> tuple[LoadRun, ...]:
    """mlxcel's 18 published gfx1151 peaks with the load's terms from the built-in
    profiles (their configs and tensor lists), in-flight reserve as each run's budget."""
    from core.calibration.builtin import DATA_FILE, builtin_rows, peak_bound
    from core.catalog.profiles import load_profile, profile_snapshot
    from core.load.load import TermKind
    from core.load.mlx_lm import MlxLmPlan, plan_mlx_lm

    text = DATA_FILE.read_text("utf-8").splitlines()
    records = list(csv.DictReader(ln for ln in text if not ln.startswith("#")))
    out = []
    for rec, row in zip(records, builtin_rows(), strict=True):
        profile = load_profile(rec["model"])
        tensors = list(profile.tensors) if profile.tensors is not None else None
        inflight = int(rec["inflight_mib"]) << 20
        plan = plan_mlx_lm(profile_snapshot(profile), tensors, inflight_bytes=inflight)
        if not isinstance(plan, MlxLmPlan):
            raise CalibrationRefused(f"{rec['model']}: no load: {plan.reason}")
        context = int(rec["context"])
        load = plan.at(context, context - BUILTIN_GEN_TOKENS)
        transient = sum(t.bytes for t in load.terms if t.kind is TermKind.TRANSIENT)
        out.append(
            LoadRun(
                model=rec["model"],
                weights_bytes=load.weights_bytes,
                kv_bytes=load.kv_bytes,
                inflight_bytes=inflight,
                transient_bytes=transient,
                peak_bytes=peak_bound(int(rec["printed_peak_centi_gb"])),
                mlxcel_total_bytes=row.terms.mlxcel_total_bytes,
            )
        )
    return tuple(out)


@cache
def builtin_load_fit() -> LoadFit:
    """The load refitted on mlxcel's 18 gfx1151 peaks, with its held-out figures."""
    return fit_load(builtin_load_runs())
