"""Runs grouped by what they calibrate (engine, formula, device), each group fitted or
refused on its own: CPU runs never calibrate a GPU."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.backend import Backend
from core.calibration.fit import CalibrationRefused, fit_workloads
from core.calibration.key import CalibrationKey
from core.calibration.record import Calibration
from core.calibration.rows import CalibrationRow, RunTerms, WorkloadRuns
from core.calibration.targets import DEFAULT_TARGET
from core.measurement.engine import Engine


@dataclass(frozen=True)
class GroupResult:
    """One group's calibration, or why there is none."""

    key: CalibrationKey
    runs: int
    calibration: Calibration | None
    refused: str | None = None
    warning: str | None = None
    """One line about a fit that was made but could not be cross-validated."""


def _same_device(value: str | None, wanted: str | None) -> bool:
    return wanted is None or (value is not None and value.casefold() == wanted.casefold())


def row_key(row: CalibrationRow | RunTerms) -> CalibrationKey:
    """The group a row (or a workload's terms) calibrates."""
    return CalibrationKey(row.engine, row.backend, row.device, row.measured_on)


def calibrate_groups(
    workloads: Sequence[WorkloadRuns],
    *,
    engine: Engine | None = None,
    backend: Backend | None = None,
    device: str | None = None,
    fitted_at: str = "",
    target: str = DEFAULT_TARGET,
) -> list[GroupResult]:
    """Fit every (engine, formula, device) group of the runs the filters keep: `engine`,
    `backend` (the kind of device the runs ran on) and `device` (its name, any case)."""
    groups: dict[CalibrationKey, list[WorkloadRuns]] = {}
    for w in workloads:
        t = w.terms
        if (
            (engine is None or t.engine is engine)
            and (backend is None or t.device_kind is backend)
            and _same_device(t.device, device)
        ):
            groups.setdefault(row_key(t), []).append(w)
    out = []
    for key in sorted(groups, key=CalibrationKey.sort_key):
        members = groups[key]
        runs = sum(w.runs for w in members)
        try:
            fit = fit_workloads(members)
        except CalibrationRefused as exc:
            out.append(GroupResult(key, runs, None, str(exc)))
            continue
        try:  # the reader's own checks: a fit it would refuse is never saved
            cal = Calibration.from_fit(
                fit,
                engine=key.engine,
                backend=key.backend,
                device=key.device,
                measured_on=key.measured_on,
                fitted_at=fitted_at,
                target=target,
            ).checked()
        except ValueError as exc:
            refused = f"the fit is outside what a calibration file holds ({exc})"
            out.append(GroupResult(key, runs, None, refused))
            continue
        why = fit.not_cross_validated
        warning = f"{key.words}: {why}" if why is not None else None
        out.append(GroupResult(key, runs, cal, warning=warning))
    return out


def key_words(key: CalibrationKey) -> str:
    """`mlx on rocm gfx1151`, `any engine on cpu (any device)`."""
    return key.words
