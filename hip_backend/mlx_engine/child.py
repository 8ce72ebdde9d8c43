"""The `mlx` engine inside the measuring child: mlx-lm loads the model, MLX counts.

`python -m hip_backend.child` runs this for a job whose engine is `Engine.MLX`, with the
same JSON-lines protocol, progress, notices and typed failures as the torch engine.
The peak is MLX's own: mx.get_peak_memory(), reset right before the load (for
synthetic weights: right after they were filled, since their random generation is
vramscope's, not a load's), over the load and both passes of the workload.
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from core import __version__
from core.backend import Backend
from core.estimate.estimate import KvCacheMode
from core.measurement.engine import Engine
from core.measurement.fields import MlxFields
from core.measurement.protocol import MeasureEvent, MeasureFailed, MeasureNotice
from core.measurement.result import MeasuredPeak
from hip_backend.errors import OutOfMemoryError, UnsupportedModelError
from hip_backend.job import ChildJob

Emit = Callable[[MeasureEvent], None]
Progress = Callable[[str, int, int], None]
CAP_POLL_S = 0.005


def peak_kind(device_kind: Backend) -> str:
    """What an mlx peak counts, with the device (e.g. `MLX peak (mx.get_peak_memory), cpu`)."""
    return f"MLX peak (mx.get_peak_memory), {device_kind.value}"


class _MemoryCap:
    """Ends the run as out of memory once MLX's active memory passes the cap.

    MLX's CPU allocator does not survive a failing malloc (an address-space limit
    makes it crash), so the cap is watched instead: a thread polls
    mx.get_active_memory() (MLX releases the GIL while it computes) and, past the
    cap, writes the failure line and ends the process.
    """

    def __init__(self, cap: int, emit: Emit) -> None:
        self.cap = cap
        self.emit = emit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="vramscope-mlx-cap")

    def check(self, planned: int, what: str) -> None:
        """Fail before allocating when `planned` bytes alone exceed the cap."""
        if planned > self.cap:
            raise OutOfMemoryError(
                f"{what} need {planned:,} bytes, over the memory cap of {self.cap:,} bytes"
            )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(1.0)

    def _run(self) -> None:
        import mlx.core as mx

        while not self._stop.wait(CAP_POLL_S):
            active = int(mx.get_active_memory())
            if active > self.cap:
                error = OutOfMemoryError(
                    f"MLX's active memory reached {active:,} bytes, over the memory cap of "
                    f"{self.cap:,} bytes"
                )
                self.emit(MeasureFailed(error.failure()))
                os._exit(0)  # the failure line is the run's terminal event


def measure(job: ChildJob, emit: Emit, progress: Progress) -> MeasuredPeak:
    """Load with mlx-lm, run the workload, and return MLX's figures (raises MeasureError)."""
    from hip_backend.mlx_engine.loader import (
        import_mlx,
        load_real,
        load_synthetic,
        model_classes,
        select_device,
    )
    from hip_backend.model.source import ModelSource, load_source_config, plan_weights

    asked = job.request
    kv_bits = 8 if asked.kv_int8 else None
    versions = import_mlx()
    import mlx.core as mx

    from hip_backend.mlx_engine.footprint import Footprint
    from hip_backend.mlx_engine.workload import reset_peak, run_workload, weights_bytes

    source = ModelSource(Path(job.folder) if job.folder else None, job.profile_id)
    config = load_source_config(source)
    planned = plan_weights(source, config, force_synthetic=asked.synthetic)
    raw_config = dict(config.root)
    model_classes(raw_config)  # an unsupported family fails before anything is allocated
    synthetic = planned.synthetic
    if synthetic:
        reason = planned.plan.reason if planned.plan is not None else planned.reason
        emit(MeasureNotice(f"synthetic weights: {reason}"))
    device = select_device(asked.device)
    emit(
        MeasureNotice(
            f"device: {device.kind.value} {device.name}"
            + (f" ({device.arch})" if device.arch else "")
            + f", mlx {versions.mlx}, mlx-lm {versions.mlx_lm}"
        )
    )
    cap = _MemoryCap(asked.host_memory_cap_bytes, emit) if asked.host_memory_cap_bytes else None
    if cap is not None and planned.plan is not None:
        cap.check(planned.plan.total_bytes, "the weights")

    progress("load", 0, 1)
    if cap is not None:
        cap.start()
    try:
        started = time.perf_counter()
        if synthetic:
            model = load_synthetic(raw_config, planned.plan, seed=job.seed)
            reset_peak()  # the random fill is not a load; the weights stay counted
        else:
            reset_peak()
            assert job.folder is not None
            model = load_real(Path(job.folder), raw_config)
        load_seconds = time.perf_counter() - started
        footprint = Footprint(device.kind)
        footprint.sample()  # the load's buffers, before the workload's first clear
        progress("load", 1, 1)
        held = weights_bytes(model)
        try:
            figures = run_workload(
                model,
                vocab_size=_vocab_size(config.root, config.text),
                prompt_tokens=asked.prompt_tokens,
                gen_tokens=asked.gen_tokens,
                warmup_tokens=asked.warmup_tokens,
                kv_bits=kv_bits,
                seed=job.seed,
                chunk=job.prefill_chunk,
                progress=progress,
                sample=footprint.sample,
            )
        except (RuntimeError, ValueError) as exc:
            # MLX names kernels a backend lacks ("[GatherMM::eval] Currently only
            # supports float32." on the CPU for unquantized experts in 16 bits).
            if "only supports" in str(exc) or "not supported" in str(exc).lower():
                raise UnsupportedModelError(
                    f"MLX on {device.kind.value} cannot run this model: {str(exc).strip()}"
                ) from None
            raise
    finally:
        if cap is not None:
            cap.stop()
    if cap is not None and figures.peak_bytes > cap.cap:  # a peak too brief for the poll
        raise OutOfMemoryError(
            f"MLX's peak reached {figures.peak_bytes:,} bytes, over the memory cap of "
            f"{cap.cap:,} bytes"
        )
    del model
    os_peak = footprint.os_peak()  # VmHWM read at the end, in this process
    return MeasuredPeak(
        model=asked.model,
        device_kind=device.kind,
        device_name=device.name,
        peak_bytes=figures.peak_bytes,
        peak_kind=peak_kind(device.kind),
        inflight_mib=job.inflight_mib if device.kind.has_inflight_reserve else 0,
        prompt_tokens=asked.prompt_tokens,
        gen_tokens=asked.gen_tokens,
        synthetic_weights=synthetic,
        load_seconds=round(load_seconds, 4),
        prefill_tokens_per_s=round(figures.prefill_tokens_per_s, 2),
        decode_tokens_per_s=round(figures.decode_tokens_per_s, 2),
        torch_version="",
        arch=device.arch,
        timestamp=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        vramscope_version=__version__,
        extra=MlxFields(
            generated_tokens=figures.measured.tokens[:16],
            mlx_memory_limit_bytes=int(mx.get_memory_limit()),
        ).to_extra(),
        warmup_tokens=asked.warmup_tokens,
        weights_bytes=held,
        family=config.family,
        engine=Engine.MLX,
        mlx_version=versions.mlx,
        mlx_lm_version=versions.mlx_lm,
        active_bytes=figures.active_bytes,
        cache_bytes=figures.cache_bytes,
        kv_cache_mode=KvCacheMode.of(asked.kv_int8),
        active_plus_cache_peak_bytes=footprint.held_peak,
        os_peak_bytes=os_peak.bytes if os_peak is not None else None,
        os_peak_source=os_peak.source if os_peak is not None else None,
    )


def _vocab_size(root: Mapping[str, Any], text: Mapping[str, Any]) -> int:
    """The config's vocabulary size (prompt ids are drawn below it); 32000 if absent."""
    for obj in (text, root):
        value = obj.get("vocab_size")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 32000
