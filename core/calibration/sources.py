"""Measured runs to fit on: a CSV file or the measurement history, made into rows.

A CSV has the columns `model, context, inflight_mib, backend, peak_bytes` (the engine's
own peak; `backend` is the formula the run is held against) and optional `engine, device,
batch, kv_cache_mode, active_plus_cache_peak_bytes, os_peak_bytes`; lines starting with
`#` are comments. The target (`calibrate --target`) picks which peak column is fitted.

A record of the history is held against the formula `table` and `measure` hold it
against (`core.measurement.comparison.held_against`): a torch run on the CPU that
emulated MLX-ROCm's queue against ROCm's, with its budget. Models are resolved as
`inspect` resolves them, and each row's terms are mlxcel's estimate for its workload
with mlxcel's default factors (the environment is not read, so a calibration is the
same wherever it is fitted).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from core.backend import Backend
from core.calibration.rows import CalibrationRow, RunTerms, terms_from_estimate
from core.calibration.targets import DEFAULT_TARGET, target_named
from core.display_text import clean_text
from core.errors import VramscopeError, describe_os_error
from core.estimate.available import AvailableMemory
from core.estimate.estimate import (
    EstimateSettings,
    KvCacheMode,
    Workload,
    estimate,
)
from core.estimate.snapshot import ModelSnapshot
from core.measurement.comparison import device_backend
from core.measurement.engine import ENGINE_NAMES, Engine
from core.measurement.result import MeasuredPeak
from core.numbers import decimal_to_int
from core.regular_file import open_regular
from core.units import U64_MAX

CSV_SIZE_CAP = 1 << 30
"""A runs file is read a line at a time: 1 GiB is some 16 million runs."""
REQUIRED = ("model", "context", "inflight_mib", "backend", "peak_bytes")
OPTIONAL = (
    "engine",
    "device",
    "batch",
    "kv_cache_mode",
    "active_plus_cache_peak_bytes",
    "os_peak_bytes",
)
TARGET_FIELDS = {
    "peak": "peak_bytes",
    "active_plus_cache": "active_plus_cache_peak_bytes",
    "os_peak": "os_peak_bytes",
}
"""What each target fits: a MeasuredPeak field (history), the CSV column of that name."""
BACKEND_NAMES = tuple(b.value for b in Backend)
MAX_INFLIGHT_MIB = U64_MAX >> 20


class CalibrationInputError(VramscopeError):
    """A runs file cannot be used; the message names the file, line and column."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One measured run before its model is resolved."""

    model: str
    context: int
    inflight_mib: int
    backend: Backend
    """The formula the run is held against."""
    peak_bytes: int
    where: str
    """`FILE:LINE` or `history:N`, for messages."""
    engine: Engine | None = None
    device: str | None = None
    batch: int = 1
    kv_cache_mode: KvCacheMode = KvCacheMode.FP16
    measured_on: Backend | None = None
    """The kind of device the run ran on, where it is not `backend`."""


def _int(text: str, where: str, column: str, low: int, high: int = U64_MAX) -> int:
    digits = text.strip()
    value = decimal_to_int(digits) if digits.isascii() and digits.isdigit() else None
    if value is None or not low <= value <= high:
        shown = clean_text(text if len(text) <= 40 else text[:37] + "...")
        raise CalibrationInputError(
            f"{where}: column '{column}': expected an integer in [{low}, {high}], got '{shown}'"
        )
    return value


def _text(value: str | None, where: str, column: str) -> str | None:
    text = clean_text((value or "").strip())
    if len(text) > 200:
        raise CalibrationInputError(f"{where}: column '{column}': longer than 200 characters")
    return text or None


def _choice_cell(text: str, where: str, column: str, names: tuple[str, ...]) -> str:
    value = text.strip().lower()
    if value not in names:
        raise CalibrationInputError(
            f"{where}: column '{column}': expected one of {', '.join(names)}, "
            f"got '{clean_text(text[:40])}'"
        )
    return value


Line = tuple[int, str]
"""A physical line of a runs file: its number (from 1, comments counted) and text."""


def parse_csv(data: str, name: str, target: str = DEFAULT_TARGET) -> list[RunRecord]:
    """The runs of a CSV text, each with the target's peak; CalibrationInputError naming
    the first bad cell (or the target's missing column) by its physical line."""
    return list(records_of_lines(enumerate(data.splitlines(keepends=True), 1), name, target))


def records_of_lines(
    lines: Iterable[Line], name: str, target: str = DEFAULT_TARGET
) -> Iterator[RunRecord]:
    """The runs of numbered lines, one at a time (a file is never held whole): lines
    starting with `#` are comments, counted in the line numbers errors name."""
    at = [0]

    def data_lines() -> Iterator[str]:
        for number, text in lines:
            if not text.lstrip().startswith("#"):
                at[0] = number
                yield text

    reader = csv.reader(data_lines())
    header = [h.strip() for h in next(reader, [])]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise CalibrationInputError(f"{name}: missing column(s) {', '.join(missing)}")
    unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
    if unknown:
        raise CalibrationInputError(
            f"{name}: unknown column '{clean_text(unknown[0])}' "
            f"(known: {', '.join(REQUIRED + OPTIONAL)})"
        )
    column = TARGET_FIELDS[target_named(target)]
    if column not in header:
        raise CalibrationInputError(
            f"{name}: --target {target} needs the column '{column}', which the file lacks"
        )
    width = len(header)
    peak_at = header.index(column)
    memo: dict[tuple[str, ...], _RunCells] = {}
    for cells in reader:
        if not cells:
            continue  # a blank line, as csv.DictReader skips it
        where = f"{name}:{at[0]}"
        if len(cells) > width:
            raise CalibrationInputError(f"{where}: more cells than columns")
        peak_text = cells[peak_at] if len(cells) > peak_at else ""
        key = tuple(cells[:peak_at] + cells[peak_at + 1 :])
        read = memo.get(key)
        if read is None:
            read = _run_cells(dict(zip(header, cells, strict=False)), where)  # raises
            if len(memo) >= _MEMO_ROWS:
                memo.clear()
            memo[key] = read
        yield _record(read, _int(peak_text, where, column, 1), where)


_MEMO_ROWS = 65_536
"""Rows kept parsed by their cells other than the peak: runs repeat their model, device,
backend, context and budget, and a 10^6-run file would otherwise read each a million
times."""


@dataclass(frozen=True, slots=True)
class _RunCells:
    """A row's cells other than the peak, read."""

    model: str
    context: int
    inflight_mib: int
    backend: Backend
    engine: Engine | None
    device: str | None
    batch: int
    kv_cache_mode: KvCacheMode


def _run_cells(cell: dict[str, str], where: str) -> _RunCells:
    model = _text(cell.get("model"), where, "model")
    if model is None:
        raise CalibrationInputError(f"{where}: column 'model' is empty")
    batch_text = cell.get("batch", "").strip()
    return _RunCells(
        model=model,
        context=_int(cell.get("context", ""), where, "context", 1),
        inflight_mib=_int(cell.get("inflight_mib", ""), where, "inflight_mib", 0, MAX_INFLIGHT_MIB),
        backend=_backend_cell(cell.get("backend", ""), where),
        engine=_engine_cell(cell.get("engine", ""), where),
        device=_text(cell.get("device"), where, "device"),
        batch=_int(batch_text, where, "batch", 1) if batch_text else 1,
        kv_cache_mode=_mode_cell(cell.get("kv_cache_mode", ""), where),
    )


def _record(read: _RunCells, peak: int, where: str) -> RunRecord:
    return RunRecord(
        model=read.model,
        context=read.context,
        inflight_mib=read.inflight_mib,
        backend=read.backend,
        peak_bytes=peak,
        where=where,
        engine=read.engine,
        device=read.device,
        batch=read.batch,
        kv_cache_mode=read.kv_cache_mode,
    )


def _backend_cell(text: str, where: str) -> Backend:
    return Backend(_choice_cell(text, where, "backend", BACKEND_NAMES))


def _engine_cell(text: str, where: str) -> Engine | None:
    if not text.strip():
        return None
    return Engine(_choice_cell(text, where, "engine", ENGINE_NAMES))


def _mode_cell(text: str, where: str) -> KvCacheMode:
    mode_text = text.strip().lower() or KvCacheMode.FP16.value
    mode = next((m for m in KvCacheMode if m.value == mode_text), None)
    if mode is None:
        raise CalibrationInputError(f"{where}: column 'kv_cache_mode': expected fp16 or int8")
    return mode


def iter_csv(path: Path, target: str = DEFAULT_TARGET) -> Iterator[RunRecord]:
    """The runs of a CSV file (regular, at most `CSV_SIZE_CAP` bytes, UTF-8), read and
    yielded one line at a time, with the target's peak."""
    name = clean_text(str(path))
    try:
        fh = open_regular(path)
    except OSError as exc:
        raise CalibrationInputError(f"{name}: {describe_os_error(exc)}") from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size > CSV_SIZE_CAP:
            raise CalibrationInputError(
                f"{name}: {size:,} bytes, over vramscope's {CSV_SIZE_CAP:,}-byte limit for a "
                f"runs file (a run is a line of about 60 bytes: some {CSV_SIZE_CAP // 64:,} "
                "runs); split it or leave out repeated runs"
            )
        text = io.TextIOWrapper(fh, encoding="utf-8-sig", newline="")
        lines = enumerate(text, 1)
        try:
            yield from records_of_lines(lines, name, target)
        except UnicodeDecodeError as exc:
            line = _line_after(lines)
            raise CalibrationInputError(f"{name}:{line}: not UTF-8 (byte {exc.start})") from None
        except csv.Error as exc:
            raise CalibrationInputError(f"{name}: not a CSV file ({exc})") from None


def _line_after(lines: Iterator[Line]) -> int:
    """The number of the line a decoding error was met on (the next one to be read)."""
    try:
        return next(lines)[0]
    except (StopIteration, UnicodeDecodeError, ValueError):
        return 0


def read_csv(path: Path, target: str = DEFAULT_TARGET) -> list[RunRecord]:
    """Every run of a CSV file (`iter_csv`), as a list."""
    return list(iter_csv(path, target))


def records_from_history(
    peaks: Iterable[MeasuredPeak], target: str = DEFAULT_TARGET
) -> tuple[list[RunRecord], int]:
    """The runs of the measurement history (each measured on its own device, held against
    the formula `table` holds it against) with the target's figure, and how many records
    lack it (older runs, other engines)."""
    out = []
    lacking = 0
    field_name = TARGET_FIELDS[target_named(target)]
    for n, p in enumerate(peaks, start=1):
        kind = device_backend(p.device_kind)
        if kind is None or p.peak_bytes <= 0:
            continue
        value = getattr(p, field_name)
        if not isinstance(value, int) or value <= 0:
            lacking += 1
            continue
        out.append(
            RunRecord(
                model=p.model,
                context=max(1, p.prompt_tokens + p.gen_tokens),
                inflight_mib=min(p.inflight_mib, MAX_INFLIGHT_MIB),
                backend=p.estimate_backend,
                peak_bytes=value,
                where=f"history:{n}",
                engine=p.engine,
                device=p.arch or p.device_name or None,
                kv_cache_mode=p.kv_cache_mode,
                measured_on=kind,
            )
        )
    return out, lacking


TERMS_CACHE = 4096
"""Workloads whose terms are kept while rows are made (runs repeat their workloads, and
the rows of one workload share its terms)."""


def rows_from_records(
    records: Iterable[RunRecord],
    resolve: Callable[[str], ModelSnapshot],
    *,
    skip_unresolved: bool,
) -> tuple[list[CalibrationRow], list[str]]:
    """Rows with mlxcel's terms, one record at a time; an unresolvable model is an error,
    or with `skip_unresolved` (the history) a warning and its runs left out."""
    snapshots: dict[str, ModelSnapshot | None] = {}
    cached: dict[tuple[object, ...], RunTerms] = {}
    rows: list[CalibrationRow] = []
    warnings: list[str] = []
    for rec in records:
        if rec.model not in snapshots:
            try:
                snapshots[rec.model] = resolve(rec.model)
            except VramscopeError as exc:
                if not skip_unresolved:
                    raise CalibrationInputError(f"{rec.where}: {exc}") from None
                warnings.append(f"{rec.where}: left out the runs of {rec.model} ({exc})")
                snapshots[rec.model] = None
        snap = snapshots[rec.model]
        if snap is None:
            continue
        workload = (
            rec.model, rec.backend, rec.inflight_mib, rec.context, rec.batch, rec.kv_cache_mode,
            rec.engine, rec.device, rec.measured_on,
        )  # fmt: skip
        terms = cached.get(workload)
        if terms is None:
            if len(cached) >= TERMS_CACHE:
                cached.clear()
            settings = EstimateSettings(
                rec.backend, AvailableMemory(0, "calibration"), inflight_mib=rec.inflight_mib
            )
            wl = Workload(rec.context, rec.batch, rec.kv_cache_mode.int8)
            terms = cached[workload] = terms_from_estimate(
                estimate(snap, wl, settings),
                model=rec.model,
                backend=rec.backend,
                inflight_mib=rec.inflight_mib,
                engine=rec.engine,
                device=rec.device,
                measured_on=rec.measured_on,
            )
        rows.append(CalibrationRow(terms, rec.peak_bytes))
    return rows, warnings
