"""`calibrate --engine llama.cpp`'s fit (#40): one factor per architecture and flash
attention, least squares through the origin, each run held out against the others."""

from __future__ import annotations

import pytest

from core.calibration.llama_cpp_compute import ComputeRun, factor_lines, fit_compute


def run(arch: str, theirs: int, ours: int, flash: bool = True) -> ComputeRun:
    return ComputeRun(arch, flash, theirs, ours, f"history:{theirs}")


def test_a_constant_ratio_is_the_factor_and_predicts_every_run_held_out() -> None:
    (fit,) = fit_compute(
        [run("gemma3", 110, 100), run("gemma3", 220, 200), run("gemma3", 330, 300)]
    )
    assert fit.factor == pytest.approx(1.1)
    assert fit.as_is == pytest.approx((100 / 110 - 1,) * 3)
    assert fit.held_out == pytest.approx((0.0, 0.0, 0.0))
    assert fit.covered == 3


def test_held_out_predictions_come_from_the_other_runs_only() -> None:
    # Together 1.1; run 1 predicted from run 2 alone (1.2 x 100 against 100: +20%),
    # run 2 from run 1 alone (1.0 x 100 against 120: -16.7%): neither within 10%.
    (fit,) = fit_compute([run("llama", 100, 100), run("llama", 120, 100)])
    assert fit.factor == pytest.approx(1.1)
    assert fit.held_out == pytest.approx((0.2, 100 / 120 - 1))
    assert fit.covered == 0
    lines = factor_lines(fit)
    assert "held out (each run predicted from the other 1): -16.7% to +20.0%" in lines[2]
    assert "0 of 2 within 10%" in lines[2]


def test_architectures_and_flash_attention_are_fitted_apart() -> None:
    fits = fit_compute(
        [run("qwen3", 150, 100), run("llama", 90, 100), run("llama", 200, 100, flash=False)]
    )
    assert [(f.arch, f.flash_attn, round(f.factor, 6)) for f in fits] == [
        ("llama", False, 2.0),
        ("llama", True, 0.9),
        ("qwen3", True, 1.5),
    ]
    assert all(f.held_out is None and f.covered is None for f in fits)
    assert "not held out: one run" in factor_lines(fits[0])[2]
