"""Which calibration applies: typed kinds, a named device only where it is named, and the
reason when none applies."""

from __future__ import annotations

import dataclasses

from core.backend import Backend
from core.calibration.builtin import builtin_calibration
from core.calibration.record import Calibration, CalibrationOrigin
from core.calibration.select import choose
from core.measurement.engine import Engine


def user_copy(**changes: object) -> Calibration:
    return dataclasses.replace(builtin_calibration(), origin=CalibrationOrigin.USER, **changes)  # type: ignore[arg-type]


def test_the_user_s_calibration_comes_before_the_builtin_one() -> None:
    builtin = builtin_calibration()
    mine = user_copy(fixed_bytes=1, fitted_at="2026-12-01")
    assert choose([builtin, mine], Backend.ROCM, device="gfx1151").calibration is mine
    assert choose([builtin], Backend.ROCM, device="GFX1151").calibration is builtin
    whole = user_copy(device=None, engine=None, fitted_at="2026-12-02")
    # the most specific user calibration wins when a device is named; without one, only a
    # calibration fitted for any device applies
    assert choose([mine, whole], Backend.ROCM, device="gfx1151").calibration is mine
    assert choose([mine, whole], Backend.ROCM).calibration is whole


def test_a_machine_with_no_gpu_named_gets_no_gfx1151_calibration_and_is_told_why() -> None:
    # The issue: "Calibrated ... 18 runs on gfx1151" shown with ROCm chosen, no device named.
    got = choose([builtin_calibration()], Backend.ROCM)
    assert got.calibration is None and not got.applies
    assert got.reason == (
        "no calibration for rocm: the built-in one is for gfx1151, and no device is named "
        "(a preset or --calibration-device names it)"
    )
    named = choose([builtin_calibration()], Backend.ROCM, device="gfx1100")
    assert named.calibration is None
    assert named.reason == "no calibration for rocm gfx1100: the built-in one is for gfx1151"
    mine = user_copy(device="gfx1201", fitted_at="t")
    assert choose([mine, builtin_calibration()], Backend.ROCM).reason == (
        "no calibration for rocm: calibrated for gfx1201 and gfx1151 only, and no device is "
        "named (a preset or --calibration-device names it)"
    )


def test_another_backend_or_engine_never_takes_it() -> None:
    builtin = builtin_calibration()
    cpu = choose([builtin], Backend.CPU, device="gfx1151")
    assert cpu.calibration is None
    assert cpu.reason == "no calibration for cpu gfx1151"  # CPU never takes a ROCm one
    torch = choose([builtin], Backend.ROCM, Engine.TORCH, "gfx1151")
    assert torch.calibration is None and torch.reason == "no calibration for rocm gfx1151 (torch)"
    assert choose([builtin], Backend.ROCM, Engine.MLX, "gfx1151").calibration is builtin
    any_engine = user_copy(engine=None)
    assert choose([any_engine], Backend.ROCM, Engine.TORCH, "gfx1151").calibration is any_engine


def test_a_calibration_of_torch_runs_on_the_cpu_applies_to_that_cpu_only() -> None:
    emulated = user_copy(engine=Engine.TORCH, device="AMD EPYC", measured_on=Backend.CPU)
    assert choose([emulated], Backend.ROCM).calibration is None
    assert choose([emulated], Backend.ROCM, device="gfx1151").calibration is None
    assert choose([emulated], Backend.ROCM, device="amd epyc").calibration is emulated
    # its formula is ROCm's (the queue was emulated): never a CPU estimate's
    assert choose([emulated], Backend.CPU, device="AMD EPYC").calibration is None
