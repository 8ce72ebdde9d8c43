"""One measured run as the fit sees it: mlxcel's terms for the run's workload and its peak."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from core.backend import Backend
from core.estimate.estimate import KvCacheMode, MemoryEstimate
from core.measurement.engine import Engine


@dataclass(frozen=True, slots=True)
class LoadTerms:
    """The load's terms for one workload (bytes), every run of it alike."""

    model: str
    weights_bytes: int
    kv_bytes: int
    inflight_bytes: int
    transient_bytes: int
    """The prefill transient, the in-flight reserve not included."""
    mlxcel_total_bytes: int
    """mlxcel's estimate of the same workload, for the figures beside it."""

    @property
    def load_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.inflight_bytes + self.transient_bytes


@dataclass(frozen=True, slots=True)
class RunTerms:
    """What a run's workload gives, shared by every run of the same workload (a 10^6-run
    file holds a few thousand of these, not a million)."""

    model: str
    context: int
    """Tokens of the run (prompt + generated): the estimate's `--max-tokens`."""
    inflight_mib: int
    """The in-flight budget of the run (0 = bound off; ignored off ROCm)."""
    backend: Backend
    """The backend whose formula the terms follow: the one the run is held against
    (`core.measurement.comparison.held_against`), as `table` holds it."""
    weights_bytes: int
    kv_bytes: int
    activation_bytes: int
    inflight_bytes: int
    mlxcel_total_bytes: int
    """mlxcel's estimate for the run, for the figures shown beside the fit's."""
    engine: Engine | None = None
    """None: the run calibrates its backend as a whole."""
    device: str | None = None
    """None: the run calibrates its backend as a whole."""
    batch: int = 1
    kv_cache_mode: KvCacheMode = KvCacheMode.FP16
    measured_on: Backend | None = None
    """The kind of device the run ran on, where it is not `backend` (a torch run on the
    CPU that emulated MLX-ROCm's queue is held against ROCm's formula)."""
    load: LoadTerms | None = None
    """vramscope's mlx-lm load of the same workload (`core.load`), for the load's own
    calibration; None where the model has no load (a GGUF, no safetensors headers)."""

    @property
    def device_kind(self) -> Backend:
        """The kind of device the runs ran on."""
        return self.measured_on or self.backend


@dataclass(frozen=True, slots=True)
class WorkloadRuns:
    """Every run of one workload: its terms once and its peaks in ascending order, as
    8-byte integers where they fit (a 10^6-run file is a few thousand of these and 8 MB
    of peaks, not a million row objects). Everything the fit computes depends on a run
    only through its workload's terms and its peak."""

    terms: RunTerms
    peaks: Sequence[int]
    """Ascending, never empty, never changed once built (`sorted_peaks`)."""

    @property
    def runs(self) -> int:
        return len(self.peaks)

    @property
    def highest(self) -> int:
        """The highest peak: the only one the fixed part and the margin depend on."""
        return self.peaks[-1]


def sorted_peaks(peaks: Iterable[int]) -> Sequence[int]:
    """`peaks` ascending, as an array of unsigned 8-byte integers (a tuple where one does
    not fit: a hand-edited history's figure past 2^64 - 1 or below 1, which the fit then
    refuses or reports as it always did)."""
    ordered = sorted(peaks)
    try:
        return array("Q", ordered)
    except OverflowError:
        return tuple(ordered)


def workloads_of_rows(rows: Iterable[CalibrationRow]) -> list[WorkloadRuns]:
    """The rows gathered by workload (rows built apart are apart even where their terms
    are equal: the fit gives the same either way)."""
    peaks: dict[int, tuple[RunTerms, list[int]]] = {}
    for r in rows:
        peaks.setdefault(id(r.terms), (r.terms, []))[1].append(r.peak_bytes)
    return [WorkloadRuns(terms, sorted_peaks(p)) for terms, p in peaks.values()]


def rows_of_workloads(workloads: Iterable[WorkloadRuns]) -> list[CalibrationRow]:
    """One row per run (for scripts that look at each run; the fit does not need them)."""
    return [CalibrationRow(w.terms, p) for w in workloads for p in w.peaks]


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    """A measured peak beside the terms of mlxcel's estimate for the same workload."""

    terms: RunTerms
    peak_bytes: int
    """The figure being fitted (by default the engine's own peak: MLX's
    `mx.get_peak_memory()`, the torch engine's RSS over baseline on the CPU)."""

    @classmethod
    def build(cls, *, peak_bytes: int, **terms: Any) -> CalibrationRow:
        """A row from every field at once (`RunTerms`' and the peak)."""
        return cls(RunTerms(**terms), peak_bytes)

    @property
    def model(self) -> str:
        return self.terms.model

    @property
    def context(self) -> int:
        return self.terms.context

    @property
    def inflight_mib(self) -> int:
        return self.terms.inflight_mib

    @property
    def backend(self) -> Backend:
        return self.terms.backend

    @property
    def weights_bytes(self) -> int:
        return self.terms.weights_bytes

    @property
    def kv_bytes(self) -> int:
        return self.terms.kv_bytes

    @property
    def activation_bytes(self) -> int:
        return self.terms.activation_bytes

    @property
    def inflight_bytes(self) -> int:
        return self.terms.inflight_bytes

    @property
    def mlxcel_total_bytes(self) -> int:
        return self.terms.mlxcel_total_bytes

    @property
    def engine(self) -> Engine | None:
        return self.terms.engine

    @property
    def device(self) -> str | None:
        return self.terms.device

    @property
    def batch(self) -> int:
        return self.terms.batch

    @property
    def kv_cache_mode(self) -> KvCacheMode:
        return self.terms.kv_cache_mode

    @property
    def measured_on(self) -> Backend | None:
        return self.terms.measured_on

    @property
    def device_kind(self) -> Backend:
        """The kind of device the run ran on."""
        return self.terms.device_kind


def terms_from_estimate(
    est: MemoryEstimate,
    *,
    model: str,
    backend: Backend,
    inflight_mib: int,
    engine: Engine | None = None,
    device: str | None = None,
    measured_on: Backend | None = None,
) -> RunTerms:
    """The terms of a workload whose estimate (same context, batch, KV mode) is `est`."""
    wl = est.workload
    return RunTerms(
        model=model,
        context=wl.max_tokens,
        inflight_mib=inflight_mib,
        backend=backend,
        weights_bytes=est.weights_bytes,
        kv_bytes=est.kv_bytes,
        activation_bytes=est.activation_bytes,
        inflight_bytes=est.backend_inflight_bytes,
        mlxcel_total_bytes=est.total_bytes,
        engine=engine,
        device=device,
        batch=wl.batch,
        kv_cache_mode=wl.kv_cache_mode,
        measured_on=measured_on if measured_on is not backend else None,
    )


def row_from_estimate(
    est: MemoryEstimate,
    *,
    model: str,
    backend: Backend,
    inflight_mib: int,
    peak_bytes: int,
    engine: Engine | None = None,
    device: str | None = None,
    measured_on: Backend | None = None,
) -> CalibrationRow:
    """The row of one run whose estimate (same context, batch, KV mode) is `est`."""
    terms = terms_from_estimate(
        est,
        model=model,
        backend=backend,
        inflight_mib=inflight_mib,
        engine=engine,
        device=device,
        measured_on=measured_on,
    )
    return CalibrationRow(terms, peak_bytes)
