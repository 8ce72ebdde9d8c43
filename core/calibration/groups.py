"""Runs grouped by what they calibrate (engine, formula, device), each group fitted or
refused on its own: CPU runs never calibrate a GPU."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.backend import Backend
from core.calibration.fit import CalibrationRefused, fit_workloads
from core.calibration.key import CalibrationKey
from core.calibration.load_fit import LoadFit, fit_load_workloads
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
    load_refused: str | None = None
    """Why the load was not calibrated beside the fit (None when it was, or no fit)."""


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
        load, load_refused = _load_fit(members)
        try:  # the reader's own checks: a fit it would refuse is never saved
            cal = Calibration.from_fit(
                fit,
                engine=key.engine,
                backend=key.backend,
                device=key.device,
                measured_on=key.measured_on,
                fitted_at=fitted_at,
                target=target,
                load=load,
            ).checked()
        except ValueError as exc:
            refused = f"the fit is outside what a calibration file holds ({exc})"
            out.append(GroupResult(key, runs, None, refused))
            continue
        why = fit.not_cross_validated
        warning = f"{key.words}: {why}" if why is not None else None
        out.append(GroupResult(key, runs, cal, warning=warning, load_refused=load_refused))
    return out


def _load_fit(members: Sequence[WorkloadRuns]) -> tuple[LoadFit | None, str | None]:
    """The load calibrated on the group's runs (`load_fit`), or None and why not."""
    lacking = sorted({w.terms.model for w in members if w.terms.load is None})
    if lacking:
        return None, (
            f"no mlx-lm load for {', '.join(lacking)} (a load needs config.json and "
            "safetensors headers)"
        )
    try:
        return fit_load_workloads([(w.terms.load, w.peaks) for w in members if w.terms.load]), None
    except CalibrationRefused as exc:
        return None, str(exc)


def key_words(key: CalibrationKey) -> str:
    """`mlx on rocm gfx1151`, `any engine on cpu (any device)`."""
    return key.words
