"""Runs grouped by what they calibrate (engine, backend, device), each group fitted or
refused on its own: CPU runs never calibrate ROCm."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.calibration.fit import CalibrationRefused, fit_rows
from core.calibration.record import Calibration
from core.calibration.rows import CalibrationRow
from core.calibration.targets import DEFAULT_TARGET

GroupKey = tuple[str | None, str, str | None]
"""(engine, backend, device); None: not named by the runs."""


@dataclass(frozen=True)
class GroupResult:
    """One group's calibration, or why there is none."""

    key: GroupKey
    runs: int
    calibration: Calibration | None
    refused: str | None = None


def _picked(value: str | None, wanted: str | None) -> bool:
    return wanted is None or (value is not None and value.casefold() == wanted.casefold())


def calibrate_groups(
    rows: Sequence[CalibrationRow],
    *,
    engine: str | None = None,
    backend: str | None = None,
    device: str | None = None,
    fitted_at: str = "",
    target: str = DEFAULT_TARGET,
) -> list[GroupResult]:
    """Fit every (engine, backend, device) group of the rows the filters keep."""
    groups: dict[GroupKey, list[CalibrationRow]] = {}
    for r in rows:
        if _picked(r.engine, engine) and _picked(r.backend, backend) and _picked(r.device, device):
            groups.setdefault((r.engine, r.backend, r.device), []).append(r)
    out = []
    for key in sorted(groups, key=lambda k: tuple(x or "" for x in k)):
        members = groups[key]
        try:
            fit = fit_rows(members)
        except CalibrationRefused as exc:
            out.append(GroupResult(key, len(members), None, str(exc)))
            continue
        cal = Calibration.from_fit(
            fit, engine=key[0], backend=key[1], device=key[2], fitted_at=fitted_at, target=target
        )
        out.append(GroupResult(key, len(members), cal))
    return out


def key_words(key: GroupKey) -> str:
    """`mlx on rocm gfx1151`, `any engine on cpu (any device)`."""
    engine, backend, device = key
    return f"{engine or 'any engine'} on {backend} {device or '(any device)'}"
