"""Measured runs to fit on: a CSV file or the measurement history, made into rows.

A CSV has the columns `model, context, inflight_mib, backend, peak_bytes` (the engine's
own peak; `backend` is the formula the run is held against) and optional `engine, device,
batch, kv_cache_mode, gen_tokens, active_plus_cache_peak_bytes, os_peak_bytes`
(`gen_tokens`: how many of the context's tokens were generated, the rest the prompt;
default 0, the whole context a prompt); lines starting with `#` are comments. The
target (`calibrate --target`) picks which peak column is fitted.

A record of the history is held against the formula `table` and `measure` hold it
against (`core.measurement.comparison.held_against`): a torch run on the CPU that
emulated MLX-ROCm's queue against ROCm's, with its budget. Models are resolved as
`inspect` resolves them, and each row's terms are mlxcel's estimate for its workload
with mlxcel's default factors (the environment is not read, so a calibration is the
same wherever it is fitted). Beside them, each workload carries vramscope's mlx-lm load
for its prompt and generated tokens (`core.load`), for the load's own calibration.
"""

from __future__ import annotations

import csv
import io
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, MutableSequence, Sequence
from dataclasses import dataclass, replace
from functools import partial
from itertools import chain, filterfalse
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from core.backend import Backend
from core.calibration.load_fit import terms_of_load
from core.calibration.rows import (
    CalibrationRow,
    RunTerms,
    WorkloadRuns,
    rows_of_workloads,
    sorted_peaks,
    terms_from_estimate,
)
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
from core.load.mlx_lm import MlxLmPlan, plan_mlx_lm
from core.measurement.comparison import device_backend
from core.measurement.engine import ENGINE_NAMES, Engine
from core.measurement.result import MeasuredPeak
from core.numbers import decimal_to_int
from core.regular_file import open_regular
from core.units import U64_MAX

if TYPE_CHECKING:
    from core.load.dims import Tensor

CSV_SIZE_CAP = 1 << 30
"""A runs file is read a line at a time: 1 GiB is some 16 million runs."""
REQUIRED = ("model", "context", "inflight_mib", "backend", "peak_bytes")
OPTIONAL = (
    "engine",
    "device",
    "batch",
    "kv_cache_mode",
    "gen_tokens",
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
    prompt: int | None = None
    """The prompt's tokens of `context` (None: all of them)."""


class _BadCell(Exception):
    """A cell that cannot be read; the caller names the file and line (known only then)."""


def _int(text: str, column: str, low: int, high: int = U64_MAX) -> int:
    digits = text.strip()
    value = decimal_to_int(digits) if digits.isascii() and digits.isdigit() else None
    if value is None or not low <= value <= high:
        shown = clean_text(text if len(text) <= 40 else text[:37] + "...")
        raise _BadCell(f"column '{column}': expected an integer in [{low}, {high}], got '{shown}'")
    return value


def _text(value: str | None, column: str) -> str | None:
    text = clean_text((value or "").strip())
    if len(text) > 200:
        raise _BadCell(f"column '{column}': longer than 200 characters")
    return text or None


def _choice_cell(text: str, column: str, names: tuple[str, ...]) -> str:
    value = text.strip().lower()
    if value not in names:
        raise _BadCell(
            f"column '{column}': expected one of {', '.join(names)}, got '{clean_text(text[:40])}'"
        )
    return value


Where = Callable[[], str]
"""`FILE:LINE` of the run being read, asked for only when a message needs it."""


class PeakSink(Protocol):
    """Where the peaks of one workload's runs go, in the order they are read."""

    def append(self, peak: int, /) -> None: ...


def parse_csv(data: str, name: str, target: str = DEFAULT_TARGET) -> list[RunRecord]:
    """The runs of a CSV text, each with the target's peak; CalibrationInputError naming
    the first bad cell (or the target's missing column) by its physical line."""
    out: list[RunRecord] = []
    read_runs([data.splitlines(keepends=True)], name, _record_sinks(out), target)
    return out


def read_runs(
    blocks: Iterable[list[str]],
    name: str,
    sink_for: Callable[[RunCells, Where], PeakSink],
    target: str = DEFAULT_TARGET,
) -> None:
    """Read the runs of a runs file's physical lines, given a block at a time (a file is
    never held whole; lines starting with `#` are comments, counted in the line numbers
    errors name), and append each run's peak (the target's column) to the sink of its
    other cells: `sink_for` is asked once for each distinct set of them.
    CalibrationInputError names the first bad cell by its line."""
    block = _Block()

    def data_lines() -> Iterator[list[str]]:
        # comments are left out a block at a time, at C speed: no Python step per line
        for lines in blocks:
            block.next(lines, reader.line_num)
            yield list(filterfalse(_COMMENT.match, lines))

    reader = csv.reader(chain.from_iterable(data_lines()))

    def where() -> str:
        return f"{name}:{block.line_of(reader.line_num)}"

    header = [h.strip() for h in next(reader, [])]
    column = _check_header(header, name, target)
    width = len(header)
    peak_at = header.index(column)
    other_cells = itemgetter(*(i for i in range(width) if i != peak_at))
    sinks: dict[tuple[str, ...], PeakSink] = {}
    for cells in reader:
        if len(cells) != width:
            if not cells:
                continue  # a blank line, as csv.DictReader skips it
            if len(cells) > width:
                raise CalibrationInputError(f"{where()}: more cells than columns")
            cells += [""] * (width - len(cells))  # cells left off are empty
        key = other_cells(cells)
        sink = sinks.get(key)
        if sink is None:
            try:
                read = _run_cells(dict(zip(header, cells, strict=True)))
            except _BadCell as exc:
                raise CalibrationInputError(f"{where()}: {exc}") from None
            if len(sinks) >= _MEMO_ROWS:
                sinks.clear()
            sink = sinks[key] = sink_for(read, where)
        text = cells[peak_at]
        # the common case at C speed: at most 19 ASCII digits is below 2^64, and int()
        # reads exactly those as the strict reader does
        if text.isascii() and text.isdigit() and len(text) < 20 and (peak := int(text)):
            sink.append(peak)
            continue
        try:
            sink.append(_int(text, column, 1))
        except _BadCell as exc:
            raise CalibrationInputError(f"{where()}: {exc}") from None


class _Block:
    """Where the block being read lies, to number a run's line when a message needs it:
    the reader takes a block's lines only once the previous block's are all taken."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.first = 1
        """The physical number of the block's first line."""
        self.data_before = 0
        """Lines of earlier blocks the CSV reader took (every line but the comments)."""
        self.data_at: list[int] | None = None

    def next(self, lines: list[str], data_before: int) -> None:
        self.first += len(self.lines)
        self.lines, self.data_before, self.data_at = lines, data_before, None

    def line_of(self, data_line: int) -> int:
        """The physical number of the reader's `data_line`-th line (from 1)."""
        if self.data_at is None:  # once per block, and only where a message asks
            self.data_at = [n for n, t in enumerate(self.lines) if _COMMENT.match(t) is None]
        return self.first + self.data_at[data_line - self.data_before - 1]


_COMMENT = re.compile(r"\s*#")
"""A comment line: `#` after any white space (what `str.lstrip` removes)."""
_MEMO_ROWS = 65_536
"""Sets of cells kept read, by their text: runs repeat their model, device, backend,
context and budget, and a 10^6-run file would otherwise read each a million times."""


def _check_header(header: list[str], name: str, target: str) -> str:
    """The column the target fits; CalibrationInputError for a header that cannot be read."""
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
    return column


@dataclass(frozen=True, slots=True)
class RunCells:
    """A run's cells other than its peak, read: what its workload is."""

    model: str
    context: int
    inflight_mib: int
    backend: Backend
    engine: Engine | None
    device: str | None
    batch: int
    kv_cache_mode: KvCacheMode
    measured_on: Backend | None = None
    """Never read from a CSV: a CSV's runs are measured on their backend's kind."""
    prompt: int | None = None
    """The prompt's tokens of `context` (None: all of them)."""


def _run_cells(cell: dict[str, str]) -> RunCells:
    model = _text(cell.get("model"), "model")
    if model is None:
        raise _BadCell("column 'model' is empty")
    batch_text = cell.get("batch", "").strip()
    context = _int(cell.get("context", ""), "context", 1)
    gen_text = cell.get("gen_tokens", "").strip()
    gen = _int(gen_text, "gen_tokens", 0, context - 1) if gen_text else 0
    return RunCells(
        model=model,
        context=context,
        inflight_mib=_int(cell.get("inflight_mib", ""), "inflight_mib", 0, MAX_INFLIGHT_MIB),
        backend=Backend.named(_choice_cell(cell.get("backend", ""), "backend", BACKEND_NAMES)),
        engine=_engine_cell(cell.get("engine", "")),
        device=_text(cell.get("device"), "device"),
        batch=_int(batch_text, "batch", 1) if batch_text else 1,
        kv_cache_mode=_mode_cell(cell.get("kv_cache_mode", "")),
        prompt=context - gen if gen else None,
    )


def _record_sinks(out: list[RunRecord]) -> Callable[[RunCells, Where], PeakSink]:
    """Sinks that make each run a RunRecord (with its line) in `out`, in file order."""

    class Records:
        def __init__(self, read: RunCells, where: Where) -> None:
            self.read, self.where = read, where

        def append(self, peak: int, /) -> None:
            r = self.read
            out.append(
                RunRecord(
                    model=r.model,
                    context=r.context,
                    inflight_mib=r.inflight_mib,
                    backend=r.backend,
                    peak_bytes=peak,
                    where=self.where(),
                    engine=r.engine,
                    device=r.device,
                    batch=r.batch,
                    kv_cache_mode=r.kv_cache_mode,
                    prompt=r.prompt,
                )
            )

    return Records


def _engine_cell(text: str) -> Engine | None:
    if not text.strip():
        return None
    return Engine.named(_choice_cell(text, "engine", ENGINE_NAMES))


def _mode_cell(text: str) -> KvCacheMode:
    mode_text = text.strip().lower() or KvCacheMode.FP16.value
    try:
        return KvCacheMode.named(mode_text)
    except ValueError:
        raise _BadCell("column 'kv_cache_mode': expected fp16 or int8") from None


def read_csv_file(
    path: Path, sink_for: Callable[[RunCells, Where], PeakSink], target: str = DEFAULT_TARGET
) -> None:
    """`read_runs` of a CSV file: regular, at most `CSV_SIZE_CAP` bytes, UTF-8."""
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
        blocks = iter(partial(text.readlines, _BLOCK_CHARS), [])
        try:
            read_runs(blocks, name, sink_for, target)
        except UnicodeDecodeError:
            line, at = _first_undecodable(fh)
            raise CalibrationInputError(f"{name}:{line}: not UTF-8 (byte {at})") from None
        except csv.Error as exc:
            raise CalibrationInputError(f"{name}: not a CSV file ({exc})") from None


_BLOCK_CHARS = 1 << 16
"""Whole lines read at once: about a thousand runs."""


def _first_undecodable(fh: BinaryIO) -> tuple[int, int]:
    """(line, offset in the file) of the first byte that is not UTF-8. The text reader
    decodes ahead of the line it returns, so its error says neither: the file is read
    again, a line at a time, split where the text reader splits (\\r, \\r\\n, \\n; no
    byte of a UTF-8 sequence is one of those)."""
    fh.seek(0)
    line = offset = 0
    for chunk in fh:
        for piece in chunk.splitlines(keepends=True):
            line += 1
            try:
                piece.decode("utf-8")
            except UnicodeDecodeError as exc:
                return line, offset + exc.start
            offset += len(piece)
    return line, offset


def read_csv(path: Path, target: str = DEFAULT_TARGET) -> list[RunRecord]:
    """Every run of a CSV file (`read_csv_file`), as a RunRecord each."""
    out: list[RunRecord] = []
    read_csv_file(path, _record_sinks(out), target)
    return out


def workloads_of_csv(
    path: Path,
    resolve: Callable[[str], ModelSnapshot],
    target: str = DEFAULT_TARGET,
    tensors_of: TensorsOf | None = None,
) -> list[WorkloadRuns]:
    """The runs of a CSV file gathered by workload, with mlxcel's terms for each, a line
    at a time (no object per run is kept: a peak is 8 bytes of its workload's array). An
    unresolvable model is an error naming the line of its first run."""
    # peaks in 8-byte arrays
    workloads = _Workloads(resolve, skip_unresolved=False, tensors_of=tensors_of)
    read_csv_file(path, workloads.sink, target)
    return workloads.gathered()


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
                prompt=max(1, p.prompt_tokens) if p.gen_tokens > 0 else None,
            )
        )
    return out, lacking


class _Run(Protocol):
    """What makes a run's workload (a RunRecord's or RunCells' fields)."""

    @property
    def model(self) -> str: ...
    @property
    def context(self) -> int: ...
    @property
    def inflight_mib(self) -> int: ...
    @property
    def backend(self) -> Backend: ...
    @property
    def engine(self) -> Engine | None: ...
    @property
    def device(self) -> str | None: ...
    @property
    def batch(self) -> int: ...
    @property
    def kv_cache_mode(self) -> KvCacheMode: ...
    @property
    def measured_on(self) -> Backend | None: ...
    @property
    def prompt(self) -> int | None: ...


TensorsOf = Callable[[str, ModelSnapshot], "Sequence[Tensor] | None"]
"""A model's tensor list, for its load (as `inspect` reads it); None: none read."""


def _peak_array() -> MutableSequence[int]:
    return array("Q")  # unsigned 8 bytes: a CSV's peak is at most 2^64 - 1


class _Workloads:
    """Runs gathered by workload as they are read: each model resolved once, each
    workload's terms computed once, its peaks appended to one array."""

    def __init__(
        self,
        resolve: Callable[[str], ModelSnapshot],
        *,
        skip_unresolved: bool,
        new_peaks: Callable[[], MutableSequence[int]] = _peak_array,
        tensors_of: TensorsOf | None = None,
    ) -> None:
        self.resolve = resolve
        self.tensors_of = tensors_of
        self.plans: dict[tuple[object, ...], MlxLmPlan | None] = {}
        self.skip_unresolved = skip_unresolved
        self.new_peaks = new_peaks
        self.snapshots: dict[str, ModelSnapshot | None] = {}
        self.runs: dict[tuple[object, ...], tuple[RunTerms, MutableSequence[int]]] = {}
        self.warnings: list[str] = []

    def sink(self, run: _Run, where: Where) -> PeakSink:
        """The peaks of `run`'s workload (a sink that drops them for a model left out)."""
        if run.model not in self.snapshots:
            try:
                self.snapshots[run.model] = self.resolve(run.model)
            except VramscopeError as exc:
                if not self.skip_unresolved:
                    raise CalibrationInputError(f"{where()}: {exc}") from None
                self.warnings.append(f"{where()}: left out the runs of {run.model} ({exc})")
                self.snapshots[run.model] = None
        snap = self.snapshots[run.model]
        if snap is None:
            return _DROPPED
        workload = (
            run.model, run.backend, run.inflight_mib, run.context, run.batch,
            run.kv_cache_mode, run.engine, run.device, run.measured_on, run.prompt,
        )  # fmt: skip
        found = self.runs.get(workload)
        if found is None:
            settings = EstimateSettings(
                run.backend, AvailableMemory(0, "calibration"), inflight_mib=run.inflight_mib
            )
            wl = Workload(run.context, run.batch, run.kv_cache_mode.int8)
            est = estimate(snap, wl, settings)
            terms = terms_from_estimate(
                est,
                model=run.model,
                backend=run.backend,
                inflight_mib=run.inflight_mib,
                engine=run.engine,
                device=run.device,
                measured_on=run.measured_on,
            )
            plan = self._plan(run, snap, terms.inflight_bytes)
            if plan is not None:
                load = plan.at(run.context, run.prompt)
                terms = replace(terms, load=terms_of_load(run.model, load, est.total_bytes))
            found = self.runs[workload] = (terms, self.new_peaks())
        return found[1]

    def _plan(self, run: _Run, snap: ModelSnapshot, inflight: int) -> MlxLmPlan | None:
        """mlx-lm's load plan of the run's model and cache, read once (None: no load)."""
        key = (run.model, run.kv_cache_mode, run.batch, inflight)
        if key not in self.plans:
            tensors = self.tensors_of(run.model, snap) if self.tensors_of is not None else None
            made = plan_mlx_lm(
                snap, tensors, kv_int8=run.kv_cache_mode.int8, batch=run.batch,
                inflight_bytes=inflight,
            )  # fmt: skip
            self.plans[key] = made if isinstance(made, MlxLmPlan) else None
        return self.plans[key]

    def gathered(self) -> list[WorkloadRuns]:
        """The workloads, each one's peaks sorted (and the unsorted array let go at once,
        so the peaks are never all held twice)."""
        out = []
        while self.runs:  # popitem: the last first, in O(1)
            terms, peaks = self.runs.popitem()[1]
            out.append(WorkloadRuns(terms, sorted_peaks(peaks)))
        out.reverse()  # the order they were first read in
        return out


class _Dropped:
    def append(self, peak: int, /) -> None:
        pass


_DROPPED = _Dropped()


def workloads_from_records(
    records: Iterable[RunRecord],
    resolve: Callable[[str], ModelSnapshot],
    *,
    skip_unresolved: bool,
    tensors_of: TensorsOf | None = None,
) -> tuple[list[WorkloadRuns], list[str]]:
    """Runs gathered by workload with mlxcel's terms; an unresolvable model is an error,
    or with `skip_unresolved` (the history) a warning and its runs left out."""
    # lists, not arrays: a hand-edited history's figure may be past 2^64 - 1
    workloads = _Workloads(
        resolve, skip_unresolved=skip_unresolved, new_peaks=list, tensors_of=tensors_of
    )
    for rec in records:
        workloads.sink(rec, partial(str, rec.where)).append(rec.peak_bytes)
    return workloads.gathered(), workloads.warnings


def rows_from_records(
    records: Iterable[RunRecord],
    resolve: Callable[[str], ModelSnapshot],
    *,
    skip_unresolved: bool,
) -> tuple[list[CalibrationRow], list[str]]:
    """One row per run with mlxcel's terms (`workloads_from_records`), for scripts."""
    workloads, warnings = workloads_from_records(records, resolve, skip_unresolved=skip_unresolved)
    return rows_of_workloads(workloads), warnings
