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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.backend import Backend
from core.calibration.rows import CalibrationRow, row_from_estimate
from core.calibration.targets import DEFAULT_TARGET, target_named
from core.display_text import clean_text
from core.errors import VramscopeError, describe_os_error
from core.estimate.available import AvailableMemory
from core.estimate.estimate import EstimateSettings, KvCacheMode, Workload, estimate
from core.estimate.snapshot import ModelSnapshot
from core.measurement.comparison import device_backend
from core.measurement.engine import ENGINE_NAMES, Engine
from core.measurement.result import MeasuredPeak
from core.model.config import read_small_file
from core.numbers import decimal_to_int
from core.units import U64_MAX

CSV_SIZE_CAP = 16 * 2**20
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


@dataclass(frozen=True)
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


def parse_csv(data: str, name: str, target: str = DEFAULT_TARGET) -> list[RunRecord]:
    """The runs of a CSV text, each with the target's peak; CalibrationInputError naming
    the first bad cell (or the target's missing column)."""
    lines = [ln for ln in data.splitlines() if not ln.lstrip().startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    header = [h.strip() for h in reader.fieldnames or []]
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
    reader.fieldnames = header
    out = []
    for n, rec in enumerate(reader, start=2):
        where = f"{name}:{n}"
        if None in rec:
            raise CalibrationInputError(f"{where}: more cells than columns")
        cell = {k: (v or "") for k, v in rec.items()}
        model = _text(cell["model"], where, "model")
        if model is None:
            raise CalibrationInputError(f"{where}: column 'model' is empty")
        backend = Backend(_choice_cell(cell["backend"], where, "backend", BACKEND_NAMES))
        engine_text = cell.get("engine", "")
        engine = (
            Engine(_choice_cell(engine_text, where, "engine", ENGINE_NAMES))
            if engine_text.strip()
            else None
        )
        mode_text = cell.get("kv_cache_mode", "").strip().lower() or KvCacheMode.FP16.value
        mode = next((m for m in KvCacheMode if m.value == mode_text), None)
        if mode is None:
            raise CalibrationInputError(f"{where}: column 'kv_cache_mode': expected fp16 or int8")
        batch_text = cell.get("batch", "").strip()
        out.append(
            RunRecord(
                model=model,
                context=_int(cell["context"], where, "context", 1),
                inflight_mib=_int(cell["inflight_mib"], where, "inflight_mib", 0, MAX_INFLIGHT_MIB),
                backend=backend,
                peak_bytes=_int(cell[column], where, column, 1),
                where=where,
                engine=engine,
                device=_text(cell.get("device"), where, "device"),
                batch=_int(batch_text, where, "batch", 1) if batch_text else 1,
                kv_cache_mode=mode,
            )
        )
    return out


def read_csv(path: Path, target: str = DEFAULT_TARGET) -> list[RunRecord]:
    """The runs of a CSV file (regular, at most 16 MiB, UTF-8), with the target's peak."""
    name = clean_text(str(path))
    try:
        raw = read_small_file(path, CSV_SIZE_CAP)
    except OSError as exc:
        raise CalibrationInputError(f"{name}: {describe_os_error(exc)}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CalibrationInputError(f"{name}: not UTF-8 (byte {exc.start})") from None
    try:
        return parse_csv(text, name, target)
    except csv.Error as exc:
        raise CalibrationInputError(f"{name}: not a CSV file ({exc})") from None


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


def rows_from_records(
    records: Sequence[RunRecord],
    resolve: Callable[[str], ModelSnapshot],
    *,
    skip_unresolved: bool,
) -> tuple[list[CalibrationRow], list[str]]:
    """Rows with mlxcel's terms; an unresolvable model is an error, or with
    `skip_unresolved` (the history) a warning and its runs left out."""
    snapshots: dict[str, ModelSnapshot | None] = {}
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
        settings = EstimateSettings(
            rec.backend, AvailableMemory(0, "calibration"), inflight_mib=rec.inflight_mib
        )
        wl = Workload(rec.context, rec.batch, rec.kv_cache_mode.int8)
        rows.append(
            row_from_estimate(
                estimate(snap, wl, settings),
                model=rec.model,
                backend=rec.backend,
                inflight_mib=rec.inflight_mib,
                peak_bytes=rec.peak_bytes,
                engine=rec.engine,
                device=rec.device,
                measured_on=rec.measured_on,
            )
        )
    return rows, warnings
