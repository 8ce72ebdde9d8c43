"""The built-in calibration: gfx1151 ROCm, fitted on mlxcel's 18 published peaks.

The rows are data in `data/gfx1151_rocm.csv` (with their source); the terms of each
row come from the built-in profiles of the three models, so the fit is recomputed
from the published figures, never stored as a bare number.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from functools import cache
from pathlib import Path

from core.backend import Backend
from core.calibration.fit import CalibrationRefused, fit_rows
from core.calibration.load_fit import LoadFit, LoadRun, fit_load
from core.calibration.record import Calibration, CalibrationOrigin
from core.calibration.rows import CalibrationRow, row_from_estimate
from core.measurement.engine import Engine

DATA_FILE = Path(__file__).resolve().parent / "data" / "gfx1151_rocm.csv"
BUILTIN_DEVICE = "gfx1151"
BUILTIN_ENGINE = Engine.MLX
"""mlxcel's bench runs MLX itself; its peak is MLX's `get_peak_memory()`."""


def peak_bound(centi_gb: int) -> int:
    """The largest peak a printed two-decimal GB figure can stand for."""
    return centi_gb * 10**7 + 5 * 10**6


@cache
def builtin_rows() -> tuple[CalibrationRow, ...]:
    """The 18 published rows with mlxcel's terms for each (from the built-in profiles)."""
    from core.catalog.profiles import load_profile, profile_snapshot
    from core.estimate.available import AvailableMemory
    from core.estimate.estimate import EstimateSettings, Workload, estimate

    lines = [ln for ln in DATA_FILE.read_text("utf-8").splitlines() if not ln.startswith("#")]
    rows = []
    for rec in csv.DictReader(lines):
        snapshot = profile_snapshot(load_profile(rec["model"]))
        mib = int(rec["inflight_mib"])
        settings = EstimateSettings(
            Backend.ROCM, AvailableMemory(0, "builtin calibration"), inflight_mib=mib
        )
        est = estimate(snapshot, Workload(int(rec["context"])), settings)
        rows.append(
            row_from_estimate(
                est,
                model=rec["model"],
                backend=Backend.ROCM,
                inflight_mib=mib,
                peak_bytes=peak_bound(int(rec["printed_peak_centi_gb"])),
                engine=BUILTIN_ENGINE,
                device=BUILTIN_DEVICE,
            )
        )
    return tuple(rows)


@cache
def builtin_calibration() -> Calibration:
    """gfx1151 ROCm, MLX's peak, 18 runs of 3 models; mlxcel's form and the load's."""
    return Calibration.from_fit(
        fit_rows(builtin_rows()),
        backend=Backend.ROCM,
        engine=BUILTIN_ENGINE,
        device=BUILTIN_DEVICE,
        origin=CalibrationOrigin.BUILTIN,
        load=builtin_load_fit(),
    )


BUILTIN_GEN_TOKENS = 128
"""mlxcel's bench generated 128 tokens after `context - 128` prompt tokens."""


@cache
def builtin_load_runs() -> tuple[LoadRun, ...]:
    """mlxcel's 18 published gfx1151 peaks with the load's terms from the built-in
    profiles (their configs and tensor lists), in-flight reserve as each run's budget."""
    from core.catalog.profiles import load_profile, profile_snapshot
    from core.load.load import LoadTerm, Origin, TermKind
    from core.load.mlx_lm import MlxLmPlan, plan_mlx_lm

    text = DATA_FILE.read_text("utf-8").splitlines()
    records = list(csv.DictReader(ln for ln in text if not ln.startswith("#")))
    out = []
    plans: dict[str, MlxLmPlan] = {}  # one read of each model; the rows vary the reserve
    for rec, row in zip(records, builtin_rows(), strict=True):
        if rec["model"] not in plans:
            profile = load_profile(rec["model"])
            tensors = list(profile.tensors) if profile.tensors is not None else None
            plan = plan_mlx_lm(profile_snapshot(profile), tensors)
            if not isinstance(plan, MlxLmPlan):
                raise CalibrationRefused(f"{rec['model']}: no load: {plan.reason}")
            plans[rec["model"]] = plan
        inflight = int(rec["inflight_mib"]) << 20
        reserve = LoadTerm(TermKind.INFLIGHT, inflight, Origin.SETTING) if inflight else None
        context = int(rec["context"])
        load = replace(plans[rec["model"]], inflight=reserve).at(
            context, context - BUILTIN_GEN_TOKENS
        )
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
