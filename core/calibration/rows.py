"""One measured run as the fit sees it: mlxcel's terms for the run's workload and its peak."""

from __future__ import annotations

from dataclasses import dataclass

from core.backend import Backend
from core.estimate.estimate import KvCacheMode, MemoryEstimate
from core.measurement.engine import Engine


@dataclass(frozen=True)
class CalibrationRow:
    """A measured peak beside the terms of mlxcel's estimate for the same workload."""

    model: str
    context: int
    """Tokens of the run (prompt + generated): the estimate's `--max-tokens`."""
    inflight_mib: int
    """The in-flight budget of the run (0 = bound off; ignored off ROCm)."""
    backend: Backend
    """The backend whose formula the terms follow: the one the run is held against
    (`core.measurement.comparison.held_against`), as `table` holds it."""
    peak_bytes: int
    """The figure being fitted (by default the engine's own peak: MLX's
    `mx.get_peak_memory()`, the torch engine's RSS over baseline on the CPU)."""
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

    @property
    def device_kind(self) -> Backend:
        """The kind of device the run ran on."""
        return self.measured_on or self.backend


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
    wl = est.workload
    return CalibrationRow(
        model=model,
        context=wl.max_tokens,
        inflight_mib=inflight_mib,
        backend=backend,
        peak_bytes=peak_bytes,
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
