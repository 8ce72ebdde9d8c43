"""The load's calibration: its transient scaled and a fixed part, fitted for coverage,
held out model by model, and refitted on mlxcel's 18 published gfx1151 peaks."""

from __future__ import annotations

import pytest

from core.calibration.builtin import builtin_load_fit, builtin_load_runs
from core.calibration.fit import CalibrationRefused
from core.calibration.load_fit import LoadRun, _Runs, fit_load, fit_load_workloads

GB = 10**9


def run(model: str, transient: int, peak: int, weights: int = 4 * GB) -> LoadRun:
    return LoadRun(model, weights, GB // 10, 256 << 20, transient, peak, peak + GB)


def test_a_backend_holding_half_the_transient_and_a_fixed_buffer_is_recovered() -> None:
    fixed = 300 * 10**6
    runs = [
        run(m, t, 4 * GB + GB // 10 + (256 << 20) + t // 2 + fixed, weights=4 * GB)
        for m in ("a", "b", "c")
        for t in (200 * 10**6, 900 * 10**6, 2 * GB)
    ]
    fit = fit_load(runs)
    assert (fit.scale_percent, fit.fixed_bytes) == (50, fixed)
    assert fit.training.covered == fit.training.rows == 9
    assert fit.training.worst_overshoot == 0
    assert fit.held_out is not None and fit.held_out.covered == 9
    # Uncalibrated, the whole transient covers half of it plus 300 MB only from 600 MB.
    assert fit.uncalibrated.covered == 6


def test_runs_of_one_model_are_refused_and_two_are_not_held_out() -> None:
    with pytest.raises(CalibrationRefused, match="at least 2 models"):
        fit_load([run("a", GB, 5 * GB), run("a", 2 * GB, 6 * GB)])
    fit = fit_load([run("a", GB, 5 * GB), run("b", 2 * GB, 6 * GB)])
    assert fit.held_out is None


def test_the_builtin_gfx1151_peaks_refitted_against_the_load() -> None:
    runs = builtin_load_runs()
    assert len(runs) == 18 and len({r.model for r in runs}) == 3
    fit = builtin_load_fit()
    # Every training peak covered; the load as fitted on the CPU misses 10 of them.
    assert fit.training.covered == 18
    assert fit.uncalibrated.covered == 8
    assert fit.held_out is not None
    # Beside mlxcel's estimate on the same peaks: a lower median overshoot held out.
    assert fit.mlxcel.covered == 18
    assert fit.held_out.median_overshoot < fit.mlxcel.median_overshoot
    assert fit.held_out.worst_overshoot < fit.mlxcel.worst_overshoot


def test_a_workload_of_many_runs_fits_as_its_runs_one_by_one() -> None:
    # 300 runs a workload: past the count where the overshoots are summed through
    # sum(1 / peak) rather than run by run; the fit and its figures are the same.
    repeats = range(300)
    runs = [
        LoadRun(r.model, r.weights_bytes, r.kv_bytes, r.inflight_bytes, r.transient_bytes,
                r.peak_bytes - k * 10**7, r.mlxcel_total_bytes)
        for r in builtin_load_runs()
        for k in repeats
    ]  # fmt: skip
    one_by_one = fit_load(runs)
    gathered = fit_load_workloads(
        [(r.terms, sorted(r.peak_bytes - k * 10**7 for k in repeats)) for r in builtin_load_runs()]
    )
    assert (gathered.scale_percent, gathered.fixed_bytes) == (
        one_by_one.scale_percent,
        one_by_one.fixed_bytes,
    )
    assert gathered.training == one_by_one.training
    assert gathered.held_out == one_by_one.held_out
    assert gathered.runs == len(runs) == 18 * 300
    # and the summed overshoot it minimises is each run's, summed through sum(1 / peak)
    r = builtin_load_runs()[0]
    peaks = sorted(r.peak_bytes - k * 10**7 for k in repeats)
    estimate = r.terms.load_bytes
    assert _Runs.of(r.terms, peaks).overshoot_sum(estimate) == pytest.approx(
        sum(estimate / p - 1 for p in peaks), rel=1e-12
    )
