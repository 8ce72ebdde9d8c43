"""Which calibration applies to an estimate, or why none does.

A calibration applies to an estimate of its backend's formula; one fitted for an engine
only where no other engine is asked for; one fitted for a named device only where the
question names that device (the built-in gfx1151 one is not held against a GPU nobody
named, nor against a machine with none). Among those that apply: the user's before the
built-in, then the most specific (engine, device), then the latest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.backend import Backend
from core.calibration.record import Calibration, CalibrationOrigin
from core.measurement.engine import Engine


@dataclass(frozen=True)
class CalibrationChoice:
    """The calibration that applies, or why none does."""

    calibration: Calibration | None
    reason: str | None = None
    """Why none applies (`no calibration for rocm: the built-in one is for gfx1151, and
    no device is named`); None when one does."""

    @property
    def applies(self) -> bool:
        """True when a calibration applies."""
        return self.calibration is not None


def _same_device(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


def matches(cal: Calibration, backend: Backend, engine: Engine | None, device: str | None) -> bool:
    """True when `cal` may calibrate an estimate for this backend, engine (None: any) and
    device (None: not named). A calibration without an engine covers every engine, one
    without a device every device; one for a named device only that device."""
    if cal.backend is not backend:
        return False
    if engine is not None and cal.engine is not None and cal.engine is not engine:
        return False
    if cal.device is None:
        return True
    return device is not None and _same_device(cal.device, device)


def _where(backend: Backend, device: str | None, engine: Engine | None) -> str:
    where = f"{backend.value} {device}" if device else backend.value
    return where + (f" ({engine.value})" if engine is not None else "")


def _devices_words(cals: Sequence[Calibration]) -> str:
    names = list(dict.fromkeys(c.device for c in cals if c.device is not None))
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def _why_none(
    cals: Sequence[Calibration], backend: Backend, engine: Engine | None, device: str | None
) -> str:
    """The reason nothing in `cals` applies, naming what would."""
    where = _where(backend, device, engine)
    for_engine = [
        c
        for c in cals
        if c.backend is backend and (engine is None or c.engine is None or c.engine is engine)
    ]
    if not for_engine:
        return f"no calibration for {where}"
    devices = _devices_words(for_engine)  # each is for a named device, not this one
    if all(c.origin is CalibrationOrigin.BUILTIN for c in for_engine):
        why = f"the built-in one is for {devices}"
    else:
        why = f"calibrated for {devices} only"
    if device is None:
        why += ", and no device is named (a preset or --calibration-device names it)"
    return f"no calibration for {where}: {why}"


def choose(
    cals: Sequence[Calibration],
    backend: Backend,
    engine: Engine | None = None,
    device: str | None = None,
) -> CalibrationChoice:
    """The calibration to use for an estimate of `backend`'s formula on `device` (its gfx
    target or name; None: not named) by `engine` (None: any), or why there is none."""
    found = [c for c in cals if matches(c, backend, engine, device)]
    if not found:
        return CalibrationChoice(None, _why_none(cals, backend, engine, device))

    def rank(c: Calibration) -> tuple[bool, int, str]:
        specific = int(engine is not None and c.engine is not None) + int(c.device is not None)
        return (c.origin is not CalibrationOrigin.BUILTIN, specific, c.fitted_at)

    return CalibrationChoice(max(found, key=rank))


def default_candidates() -> tuple[tuple[Calibration, ...], tuple[str, ...]]:
    """The calibrations `inspect --calibrated` and the explorer choose from: your own
    (the latest `vramscope calibrate`) before the built-in one, and the store's warning."""
    from core.calibration.builtin import builtin_calibration
    from core.calibration.store import default_path, read_store

    read = read_store(default_path())
    return (*read.calibrations, builtin_calibration()), read.warnings
