"""vramscope's calibrated estimate in an answer: only where a calibration applies to this
device, and otherwise why not.

A calibration fitted on one device (the built-in one: mlxcel's 18 peaks on gfx1151)
says nothing of another, nor of a device nobody named: on a machine with no GPU, a
ROCm question names no card, so no device calibration applies and the answer says so.
One fitted across a backend's devices (no device recorded) applies to any of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.answer.verdict import Scope, Verdict

if TYPE_CHECKING:
    from core.answer.answer import Answer
    from core.answer.device import Device
    from core.calibration.record import Calibration
    from core.measurement.engine import Engine


NO_VERDICT = Verdict(Scope.CALIBRATED, None)


@dataclass(frozen=True)
class CalibratedAnswer:
    """The calibrated total and verdict, or (calibration None) why there is none."""

    calibration: Calibration | None
    total_bytes: int | None
    verdict: Verdict
    """The calibrated total against the available memory (no verdict without one)."""
    line: str
    """`inspect --calibrated`'s line, to the character (`core.calibration.report`)."""
    reason: str = ""
    """Why no calibration applies ("" when one does)."""
    load_total_bytes: int | None = None
    """vramscope's mlx-lm load with the calibration's transient scale and fixed part
    (None: the calibration has no load fit, or the answer no mlx-lm load)."""
    load_line: str = ""
    """`inspect --calibrated`'s line for it, under `line` ("" without one)."""
    load_verdict: Verdict = NO_VERDICT
    """The load calibrated against the available memory (no verdict without it)."""

    @property
    def fits(self) -> bool | None:
        """The calibrated verdict (None without a calibration)."""
        return self.verdict.fits


def choose_for_device(
    device: Device, calibrations: Sequence[Calibration], engine: Engine | str | None = None
) -> tuple[Calibration | None, str]:
    """The calibration that applies to `device` (of `engine` when given: the user's before
    the built-in one, the most specific, the latest), or None and why none does
    (`core.calibration.select.choose`: a device's calibration applies to that device only,
    an any-device one to all)."""
    from core.calibration.select import choose
    from core.measurement.engine import Engine

    kind = Engine.named(engine.strip().lower()) if isinstance(engine, str) else engine
    chosen = choose(calibrations, device.backend, kind, device.target)
    return chosen.calibration, chosen.reason or ""


def calibrate_answer(
    answer: Answer, calibrations: Sequence[Calibration], engine: Engine | str | None = None
) -> CalibratedAnswer:
    """The calibration that applies to the answer's device, and its total."""
    from core.calibration.report import (
        calibrated_line,
        calibrated_load_line,
        calibrated_load_total,
        calibrated_total,
        no_calibration_line,
    )
    from core.load.load import LoadEngine

    device = answer.question.device
    if not answer.single_device:
        return CalibratedAnswer(
            None, None, NO_VERDICT, "", "a calibrated estimate is single-device only"
        )
    cal, reason = choose_for_device(device, calibrations, engine)
    if cal is None:
        return CalibratedAnswer(None, None, NO_VERDICT, no_calibration_line(reason), reason)
    est = answer.estimate
    total = calibrated_total(cal, est)
    verdict = Verdict.of_total(total, est.available_bytes, Scope.CALIBRATED)
    load = answer.load
    if cal.load is None or load is None or load.engine is not LoadEngine.MLX_LM:
        return CalibratedAnswer(cal, total, verdict, calibrated_line(cal, est))
    load_total = calibrated_load_total(cal.load, load)
    return CalibratedAnswer(
        cal,
        total,
        verdict,
        calibrated_line(cal, est),
        load_total_bytes=load_total,
        load_line=calibrated_load_line(cal, load, est.available_bytes),
        load_verdict=Verdict.of_total(load_total, est.available_bytes, Scope.CALIBRATED),
    )
