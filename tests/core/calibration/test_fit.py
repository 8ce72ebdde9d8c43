"""The calibrated estimate's fit: its arithmetic, its refusal, its held-out figures."""

from __future__ import annotations

import random
import statistics

import pytest

from core.backend import Backend
from core.calibration.builtin import builtin_calibration, builtin_rows
from core.calibration.fit import (
    MARGIN_BASIS_POINTS,
    CalibrationRefused,
    covering_margin,
    cross_validate,
    figures,
    fit_fixed_bytes,
    fit_rows,
    predict,
    row_prediction,
    workload_figures,
)
from core.calibration.record import CalibrationOrigin
from core.calibration.rows import CalibrationRow
from core.units import GIB, MIB


def row(model: str, peak: int, w: int, k: int, i: int = 0, mlxcel: int = 0) -> CalibrationRow:
    return CalibrationRow.build(
        model=model,
        context=640,
        inflight_mib=i // MIB,
        backend=Backend.ROCM,
        peak_bytes=peak,
        weights_bytes=w,
        kv_bytes=k,
        activation_bytes=0,
        inflight_bytes=i,
        mlxcel_total_bytes=mlxcel or peak,
    )


FIXED_ROWS = [
    # excess over W + 2K + I: 100, 300, 200 MiB
    row("a", 4 * GIB + 2 * 10 * MIB + 100 * MIB, 4 * GIB, 10 * MIB),
    row("b", 8 * GIB + 2 * 20 * MIB + GIB + 300 * MIB, 8 * GIB, 20 * MIB, GIB),
    row("c", 2 * GIB + 2 * 5 * MIB + 200 * MIB, 2 * GIB, 5 * MIB),
]


def test_the_fixed_part_is_the_largest_excess_and_the_margin_covers_each_held_out_model() -> None:
    fit = fit_rows(FIXED_ROWS)
    assert fit.fixed_bytes == 300 * MIB
    assert fit.models == ("a", "b", "c")
    assert fit.runs == 3
    # Held out, b (excess 300 MiB) gets the 200 MiB of a fit on a and c: it is 100 MiB
    # short of W + 2K + I + 200 MiB, and the margin is what covers that (a and c held out
    # are covered by b's 300 MiB).
    b = FIXED_ROWS[1]
    assert fit.margin_basis_points == covering_margin(b, 200 * MIB) > MARGIN_BASIS_POINTS
    assert row_prediction(b, 200 * MIB, fit.margin_basis_points) >= b.peak_bytes
    assert row_prediction(b, 200 * MIB, fit.margin_basis_points - 1) < b.peak_bytes
    # s = W + 2K + I + fixed; total = s + ceil(s x margin)
    s = 4 * GIB + 20 * MIB + 300 * MIB
    m = fit.margin_basis_points
    assert predict(4 * GIB, 10 * MIB, 0, fit.fixed_bytes, m) == s + -(-s * m // 10_000)
    assert fit.training.covered == 3
    # the row that set the fixed part is covered by exactly the margin (rounded up)
    assert fit.training.least_overshoot == pytest.approx(m / 10_000, abs=1e-9)


def test_the_margin_is_at_least_one_percent() -> None:
    # Every excess the same: each model held out is covered by the others' fixed part.
    rows = [row(m, 2 * GIB + 50 * MIB, 2 * GIB, 0) for m in "abc"]
    fit = fit_rows(rows)
    assert fit.fixed_bytes == 50 * MIB
    assert fit.margin_basis_points == MARGIN_BASIS_POINTS
    assert fit.training.least_overshoot == pytest.approx(0.01, abs=1e-9)


def test_the_covering_margin_is_the_smallest_that_covers() -> None:
    for s, peak in [(1000, 1001), (10**9, 10**9 + 1), (10**9, 2 * 10**9), (7, 13), (3, 3)]:
        r = row("a", peak, s, 0)
        bp = covering_margin(r, 0)
        assert row_prediction(r, 0, bp) >= peak
        assert bp == 0 or row_prediction(r, 0, bp - 1) < peak
    # a miss past 100% stays a miss, reported by the figures, not hidden by the margin
    assert covering_margin(row("a", 5 * GIB, GIB, 0), 0) == 10_000
    assert covering_margin(row("a", GIB, 0, 0), -GIB) == 10_000


def test_a_negative_fixed_part_never_gives_a_negative_total() -> None:
    assert predict(0, 0, 0, -5 * GIB) == 0
    assert predict(GIB, 0, 0, -GIB // 2) == GIB // 2 + -(-(GIB // 2) // 100)


def test_leave_one_model_out_chooses_each_fold_s_fixed_part_and_margin_on_the_others() -> None:
    cv = cross_validate(FIXED_ROWS)
    assert cv is not None and cv.folds == 3
    # b held out: a and c give a fixed part of 200 MiB and, c held out from those (a's
    # 100 MiB against c's 200 MiB excess), a margin of 100 MiB over c's terms: enough for b.
    fold_margin = covering_margin(FIXED_ROWS[2], 100 * MIB)
    assert fold_margin > MARGIN_BASIS_POINTS
    b = FIXED_ROWS[1]
    assert row_prediction(b, 200 * MIB, fold_margin) >= b.peak_bytes
    assert (cv.vramscope.rows, cv.vramscope.covered) == (3, 3)
    assert cv.mlxcel.covered == 3  # the rows' mlxcel totals equal their peaks here
    assert cv.mlxcel.median_overshoot == 0


def test_held_out_figures_report_a_model_the_others_do_not_predict() -> None:
    # b's excess (2 GiB) is far past what a and c (100 and 110 MiB) let any fold expect.
    rows = [
        row("a", 4 * GIB + 100 * MIB, 4 * GIB, 0),
        row("b", 8 * GIB + 2 * GIB, 8 * GIB, 0),
        row("c", 2 * GIB + 110 * MIB, 2 * GIB, 0),
    ]
    fit = fit_rows(rows)
    assert fit.training.covered == 3  # every training run is covered...
    assert fit.cross_validated is not None
    held = fit.cross_validated.vramscope
    assert held.covered == 2 and held.least_overshoot < 0  # ...b held out is not


@pytest.mark.parametrize("models", [[], ["a"]])
def test_fewer_than_two_models_are_refused_with_the_reason(models: list[str]) -> None:
    rows = [r for r in FIXED_ROWS if r.model in models] * 5  # many runs do not help
    with pytest.raises(CalibrationRefused, match="at least 2 models") as info:
        fit_rows(rows)
    assert f"got {len(models)}" in str(info.value)
    assert "predicting one model's runs from another model's" in str(info.value)


def test_two_models_are_fitted_and_said_not_to_be_cross_validated() -> None:
    rows = [r for r in FIXED_ROWS if r.model in ("a", "b")]
    fit = fit_rows(rows)
    assert fit.models == ("a", "b") and fit.training.covered == 2
    assert fit.fixed_bytes == fit_fixed_bytes(rows) == 300 * MIB
    # the margin still comes from each model predicted by the other: a's 100 MiB for b
    b = FIXED_ROWS[1]
    assert fit.margin_basis_points == covering_margin(b, 100 * MIB)
    assert row_prediction(b, 100 * MIB, fit.margin_basis_points) >= b.peak_bytes
    assert fit.cross_validated is None
    assert fit.not_cross_validated is not None
    assert fit.not_cross_validated.startswith("not cross-validated: runs of 2 models")
    assert "\n" not in fit.not_cross_validated
    with pytest.raises(CalibrationRefused, match="at least 3 models"):
        cross_validate(rows)


def test_a_row_without_a_peak_is_refused() -> None:
    bad = [*FIXED_ROWS, row("d", 0, GIB, 0)]
    with pytest.raises(CalibrationRefused, match="0 bytes is not a run"):
        fit_rows(bad)


def test_the_builtin_gfx1151_rows_are_mlxcel_s_18_published_peaks() -> None:
    rows = builtin_rows()
    assert len(rows) == 18
    llama = next(r for r in rows if "Llama" in r.model and r.context == 640)
    assert (llama.weights_bytes, llama.kv_bytes, llama.inflight_bytes) == (
        4_517_404_672,
        100_663_296,
        GIB,
    )
    assert llama.peak_bytes == 6_145_000_000
    assert llama.mlxcel_total_bytes == 6_653_428_633
    assert all(r.mlxcel_total_bytes >= r.peak_bytes for r in rows)


def test_builtin_leave_one_model_out_covers_every_held_out_run_with_less_waste() -> None:
    cal = builtin_calibration()
    cv = cal.cross_validated
    assert cv is not None
    assert (cal.runs, len(cal.models), cal.covered_runs) == (18, 3, 18)
    assert cal.fixed_bytes == 536_635_968  # the 30B MoE at 4096 tokens, 256 MiB budget
    # no model held out misses by more than 1%: the margin is the least, 1%
    assert (cal.margin_basis_points, cal.margin_chosen) == (100, True)
    assert (cv.folds, cv.vramscope.rows, cv.vramscope.covered) == (3, 18, 18)
    assert cv.vramscope.median_overshoot == pytest.approx(0.0405, abs=5e-5)
    # the MoE held out gets the 2.01% margin of the two dense models' fit
    assert cv.vramscope.worst_overshoot == pytest.approx(0.2043, abs=5e-5)
    # mlxcel on the same rows: every peak covered, median 7.6%, worst 31.9% (the MoE)
    assert cv.mlxcel.covered == 18
    assert cv.mlxcel.median_overshoot == pytest.approx(0.0760, abs=5e-5)
    assert cv.mlxcel.worst_overshoot == pytest.approx(0.3187, abs=5e-5)
    assert cal.mlxcel == cv.mlxcel  # mlxcel is not fitted: the same figures on the same runs
    assert cv.vramscope.median_overshoot < cv.mlxcel.median_overshoot
    assert cv.vramscope.worst_overshoot < cv.mlxcel.worst_overshoot


def test_the_builtin_calibration_survives_its_json_form() -> None:
    from core.calibration.record import Calibration

    cal = builtin_calibration()
    again = Calibration.from_dict(cal.to_dict(), origin=CalibrationOrigin.BUILTIN)
    assert again == cal


@pytest.mark.parametrize("runs_per_workload", [3, 2_000])
def test_figures_of_workloads_are_the_figures_of_their_runs(runs_per_workload: int) -> None:
    # Few runs a workload: an overshoot per run, sorted; many: the median is counted
    # (no float per run). Both must give the very floats `figures` gives run by run.
    rnd = random.Random(runs_per_workload)
    workloads, estimates, peaks = [], [], []
    for _ in range(7):
        estimate = rnd.randrange(10**9, 4 * 10**10)
        runs = sorted(
            rnd.choice([estimate, estimate + 1, rnd.randrange(10**9, 5 * 10**10)])
            for _ in range(runs_per_workload + rnd.randrange(2))  # odd and even counts
        )
        workloads.append((estimate, runs))
        estimates += [estimate] * len(runs)
        peaks += runs
    assert workload_figures(workloads) == figures(estimates, peaks)
    with pytest.raises(statistics.StatisticsError):
        workload_figures([])
