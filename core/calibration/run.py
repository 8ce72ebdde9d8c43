"""One calibration run, as `vramscope calibrate` and the explorer's recalibrate (`R`
after `m`) both do it: read the runs, fit each (engine, backend, device), save the fits.

Nothing here prints; the caller shows the warnings, the fits and the refusals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from core.backend import Backend
from core.calibration.groups import GroupResult, calibrate_groups
from core.calibration.record import Calibration
from core.calibration.sources import (
    TensorsOf,
    records_from_history,
    workloads_from_records,
    workloads_of_csv,
)
from core.calibration.store import default_path, save_merged
from core.calibration.targets import DEFAULT_TARGET, target_named, target_words
from core.display_text import clean_text
from core.errors import VramscopeError
from core.estimate.snapshot import ModelSnapshot
from core.measurement.engine import Engine
from core.measurement.history import HistoryStore


class NothingToCalibrate(VramscopeError):
    """No run to fit on, or none the filters keep; the message says where."""


class CannotSave(VramscopeError):
    """The calibration file cannot be written; the message names it."""


@dataclass(frozen=True)
class CalibrateRun:
    """What one run fitted, refused and saved."""

    source: str
    results: tuple[GroupResult, ...]
    saved_to: Path | None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def fitted(self) -> tuple[Calibration, ...]:
        """The calibrations fitted (and saved)."""
        return tuple(r.calibration for r in self.results if r.calibration is not None)


def calibrate(
    resolve: Callable[[str], ModelSnapshot],
    version: str,
    *,
    rows_file: Path | None = None,
    history: HistoryStore | None = None,
    target: str = DEFAULT_TARGET,
    engine: Engine | None = None,
    backend: Backend | None = None,
    device: str | None = None,
    store_path: Path | None = None,
    include_failed: bool = False,
    tensors_of: TensorsOf | None = None,
) -> CalibrateRun:
    """Fit the runs of `rows_file` (else the history) and save what fitted: only runs of
    `engine`, measured on a device of kind `backend` named `device`, where given (each
    fit with vramscope's load calibrated beside it, its dimensions from `tensors_of`
    where given, else from config.json). A
    history run that did not end well (a command's nonzero exit status) is left out,
    with one warning, unless `include_failed`.

    CalibrationInputError for a bad runs file, NothingToCalibrate when no run is left,
    CannotSave when the calibration file cannot be written. A fit that could not be
    cross-validated (runs of 2 models) is saved, with one warning line.
    """
    target = target_named(target)
    warnings: list[str] = []
    left_failed: str | None = None
    if rows_file is not None:
        source = clean_text(str(rows_file))
        # a line at a time, each run's peak kept in its workload's array: never the file
        # whole, nor an object per run
        workloads = workloads_of_csv(rows_file, resolve, target, tensors_of)
    else:
        store = history if history is not None else HistoryStore.default()
        read = store.read()
        warnings.extend(read.warnings)
        source = clean_text(str(store.path))
        peaks = read.results
        failed = [p for p in peaks if p.failed_status is not None]
        if failed and not include_failed:
            peaks = [p for p in peaks if p.failed_status is None]
            statuses = ", ".join(sorted({str(p.exit_status) for p in failed}))
            left_failed = (
                f"left out {len(failed)} failed run(s) (exit status {statuses}): a run that "
                "did not end well is not one to fit; --include-failed fits them"
            )
            warnings.append(f"{source}: {left_failed}")
        records, lacking = records_from_history(peaks, target)
        if lacking:
            what = target_words(target, Engine.MLX, Backend.CPU)
            warnings.append(
                f"{source}: left out {lacking} run(s) that did not record {what} "
                "(older runs, or not the mlx engine)"
            )
        workloads, skipped = workloads_from_records(
            records, resolve, skip_unresolved=True, tensors_of=tensors_of
        )
        warnings.extend(skipped)
    if not workloads and rows_file is None and read.unreadable is not None:
        raise NothingToCalibrate(
            f"{source}: cannot read the history ({clean_text(read.unreadable)}), so there "
            "are no measured runs to calibrate on"
        )
    if not workloads:
        left = f" ({left_failed})" if left_failed else ""
        raise NothingToCalibrate(f"no measured runs to calibrate on in {source}{left}")
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    results = calibrate_groups(
        workloads, engine=engine, backend=backend, device=device, fitted_at=stamp, target=target
    )
    if not results:
        raise NothingToCalibrate(f"no run in {source} matches --engine/--backend/--device")
    warnings.extend(r.warning for r in results if r.warning is not None)
    fitted = [r.calibration for r in results if r.calibration is not None]
    path = store_path if store_path is not None else default_path()
    if fitted:
        try:
            warnings.extend(save_merged(path, fitted, version))
        except (OSError, ValueError) as exc:
            where = clean_text(str(path))
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise CannotSave(f"{where}: cannot save ({why})") from None
    return CalibrateRun(source, tuple(results), path if fitted else None, tuple(warnings))
