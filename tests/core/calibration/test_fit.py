"""The calibrated estimate's fit: its arithmetic, its refusal, its held-out figures."""

from __future__ import annotations

import pytest

from core.calibration.builtin import builtin_calibration, builtin_rows
from core.calibration.fit import (
    CalibrationRefused,
    cross_validate,
    fit_rows,
    predict,
)
from core.calibration.rows import CalibrationRow
from core.units import GIB, MIB


def row(model: str, peak: int, w: int, k: int, i: int = 0, mlxcel: int = 0) -> CalibrationRow:
    return CalibrationRow(
        model=model,
        context=640,
        inflight_mib=i // MIB,
        backend="rocm",
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


def test_the_fixed_part_is_the_largest_excess_and_the_margin_is_one_percent() -> None:
    fit = fit_rows(FIXED_ROWS)
    assert fit.fixed_bytes == 300 * MIB
    assert fit.models == ("a", "b", "c")
    assert fit.runs == 3
    # s = W + 2K + I + fixed; total = s + ceil(s / 100)
    s = 4 * GIB + 20 * MIB + 300 * MIB
    assert predict(4 * GIB, 10 * MIB, 0, fit.fixed_bytes) == s + -(-s // 100)
    assert fit.training.covered == 3
    # the row that set the fixed part is covered by exactly the 1% margin (rounded up)
    assert fit.training.least_overshoot == pytest.approx(0.01, abs=1e-9)


def test_a_negative_fixed_part_never_gives_a_negative_total() -> None:
    assert predict(0, 0, 0, -5 * GIB) == 0
    assert predict(GIB, 0, 0, -GIB // 2) == GIB // 2 + -(-(GIB // 2) // 100)


def test_leave_one_model_out_predicts_each_model_from_the_others() -> None:
    cv = cross_validate(FIXED_ROWS)
    assert cv.folds == 3
    # holding out b (excess 300 MiB) leaves a fixed part of 200 MiB: b is not covered
    assert cv.vramscope.rows == 3
    assert cv.vramscope.covered == 2
    assert cv.vramscope.least_overshoot < 0
    assert cv.mlxcel.covered == 3  # the rows' mlxcel totals equal their peaks here
    assert cv.mlxcel.median_overshoot == 0


@pytest.mark.parametrize("models", [[], ["a"], ["a", "b"]])
def test_fewer_than_three_models_are_refused_with_the_reason(models: list[str]) -> None:
    rows = [r for r in FIXED_ROWS if r.model in models] * 5  # many runs do not help
    with pytest.raises(CalibrationRefused, match="at least 3 models") as info:
        fit_rows(rows)
    assert f"got {len(models)}" in str(info.value)


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
    assert (cal.runs, len(cal.models), cal.covered_runs) == (18, 3, 18)
    assert cal.fixed_bytes == 536_635_968  # the 30B MoE at 4096 tokens, 256 MiB budget
    assert (cv.folds, cv.vramscope.rows, cv.vramscope.covered) == (3, 18, 18)
    assert cv.vramscope.median_overshoot == pytest.approx(0.0405, abs=5e-5)
    assert cv.vramscope.worst_overshoot == pytest.approx(0.1924, abs=5e-5)
    # mlxcel on the same rows: every peak covered, median 7.6%, worst 31.9% (the MoE)
    assert cv.mlxcel.covered == 18
    assert cv.mlxcel.median_overshoot == pytest.approx(0.0760, abs=5e-5)
    assert cv.mlxcel.worst_overshoot == pytest.approx(0.3187, abs=5e-5)
    assert cv.vramscope.median_overshoot < cv.mlxcel.median_overshoot
    assert cv.vramscope.worst_overshoot < cv.mlxcel.worst_overshoot


def test_the_builtin_calibration_survives_its_json_form() -> None:
    from core.calibration.record import Calibration

    cal = builtin_calibration()
    again = Calibration.from_dict(cal.to_dict(), origin="builtin")
    assert again == cal
