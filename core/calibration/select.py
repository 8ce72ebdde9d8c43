"""Which calibration applies to an estimate: the user's before the built-in, then the
most specific match (engine, device), then the latest."""

from __future__ import annotations

from collections.abc import Sequence

from core.calibration.record import Calibration


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.casefold() == b.casefold()


def matches(cal: Calibration, backend: str, engine: str | None, device: str | None) -> bool:
    """True when `cal` may calibrate an estimate for this backend (engine, device as far
    as given; a calibration without an engine or device covers every one)."""
    if cal.backend != backend:
        return False
    if engine is not None and cal.engine is not None and not _same(cal.engine, engine):
        return False
    return device is None or cal.device is None or _same(cal.device, device)


def choose(
    cals: Sequence[Calibration],
    backend: str,
    engine: str | None = None,
    device: str | None = None,
) -> Calibration | None:
    """The calibration to use, or None when none matches."""
    found = [c for c in cals if matches(c, backend, engine, device)]
    if not found:
        return None

    def rank(c: Calibration) -> tuple[bool, int, str]:
        specific = int(engine is not None and c.engine is not None) + int(
            device is not None and c.device is not None
        )
        return (c.origin != "builtin", specific, c.fitted_at)

    return max(found, key=rank)


def default_candidates() -> tuple[tuple[Calibration, ...], tuple[str, ...]]:
    """The calibrations `inspect --calibrated` and the explorer choose from: your own
    (the latest `vramscope calibrate`) before the built-in one, and the store's warning."""
    from core.calibration.builtin import builtin_calibration
    from core.calibration.store import default_path, read_store

    read = read_store(default_path())
    return (*read.calibrations, builtin_calibration()), read.warnings
