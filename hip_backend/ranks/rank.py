"""One rank of a tensor- or pipeline-parallel MLX measurement (run by `mlx.launch`).

`python -m hip_backend.ranks.rank JOB.json` on every rank: joins the ring group
(`mx.distributed.init(backend="ring", strict=True)`, which reads `MLX_RANK` and
`MLX_HOSTFILE` from mlx.launch), loads the model the way mlx-lm's
`sharded_load` does (`load_model(lazy=True, strict=False)`, then
`model.shard(group)` or `model.model.pipeline(group)`, `mx.eval` of the
parameters and an `all_sum` barrier; the tokenizer and downloads are skipped),
or random weights of the real names and shapes through the same load path when
there are none, runs the workload and writes its own `mx.get_peak_memory()` to
`OUT_DIR/rank-<r>.jsonl` as protocol lines (core.measurement events).

The workload is the single-device MLX engine's (hip_backend/mlx_engine/workload.py):
the same warm-up, prompt and greedy decode in every rank, with deterministic
token ids, so the ranks agree without communicating. `--single` runs the same
load and workload in one process without a group: the independent single-device
run a split load is compared with.
"""

from __future__ import annotations

import datetime
import platform
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

from core import __version__
from core.backend import Backend
from core.measurement.engine import Engine
from core.measurement.fields import RankFields
from core.measurement.protocol import (
    MeasureEvent,
    MeasureFailed,
    MeasureProgress,
    MeasureResult,
    encode_event,
)
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from core.parallel.sharding import ParallelKind
from hip_backend.parent_watch import watch_parent
from hip_backend.ranks.job import RANK_FILE, SINGLE_FILE, RankJob

_STARTED = time.perf_counter()


class _RankOut:
    """Protocol lines to this rank's file, flushed per line (the parent polls it)."""

    def __init__(self, path: Path) -> None:
        self._stream: IO[str] = path.open("w", encoding="utf-8", buffering=1)

    def __call__(self, event: MeasureEvent) -> None:
        self._stream.write(encode_event(event) + "\n")
        self._stream.flush()


def _lazy_model(job: RankJob) -> Any:
    """The whole model, not evaluated: the folder's files, or random arrays of its tensors
    through mlx-lm's own load path (hip_backend/mlx_engine/loader.py, as the single-device
    engine)."""
    from mlx_lm.utils import load_model

    from hip_backend.mlx_engine import build_synthetic
    from hip_backend.model.source import ModelSource, load_source_config, plan_weights

    if not job.synthetic:
        assert job.folder is not None
        model, _ = load_model(Path(job.folder), lazy=True, strict=False)
        return model
    source = ModelSource(
        folder=Path(job.folder) if job.folder is not None else None, profile_id=job.profile_id
    )
    planned = plan_weights(source, load_source_config(source), force_synthetic=True)
    return build_synthetic(dict(planned.config.root), planned.plan, job.seed)


def _load(job: RankJob, group: Any) -> Any:
    """The rank's share of the model, evaluated, as sharded_load does it."""
    import mlx.core as mx

    model = _lazy_model(job)
    if group is not None:
        if job.kind is ParallelKind.TENSOR:
            model.shard(group)
        else:
            model.model.pipeline(group)
    mx.eval(model.parameters())
    if group is not None:
        mx.eval(mx.distributed.all_sum(mx.array(1.0), stream=mx.cpu))  # sharded_load's barrier
    return model


def _vocab(model: Any) -> int:
    args = getattr(model, "args", None)
    return int(getattr(args, "vocab_size", 0) or 32)


def _device() -> tuple[Backend, str]:
    import mlx.core as mx

    from hip_backend.mlx_engine.loader import gpu_kind

    if mx.default_device() == mx.cpu:
        return Backend.CPU, f"MLX CPU ({platform.machine()})"
    info = dict(mx.device_info())
    return gpu_kind(mx, info), f"MLX GPU ({info.get('device_name', 'unknown')})"


def run_rank(job: RankJob, single: bool = False) -> int:
    """Join the group, load, run, write this rank's result; the exit status.

    `single`: no group at all; the same load and workload in one process, to
    `single.jsonl`.
    """
    import mlx.core as mx

    from hip_backend.mlx_engine import import_mlx, reset_peak, run_workload

    versions = import_mlx()  # before the ring is up: it takes seconds (torch kept out)

    imported = time.perf_counter()
    group = None if single else mx.distributed.init(backend="ring", strict=True)
    joined = time.perf_counter()
    rank, size = (0, 1) if group is None else (group.rank(), group.size())
    name = SINGLE_FILE if group is None else RANK_FILE.format(rank=rank)
    emit = _RankOut(Path(job.out_dir) / name)
    try:
        if group is not None and size != job.ranks:
            raise RuntimeError(f"the group has {size} ranks, the job asked for {job.ranks}")
        reset_peak()  # before the load, so the peak covers it
        t0 = time.perf_counter()
        model = _load(job, group)
        load_s = time.perf_counter() - t0
        weights = mx.get_active_memory()
        if rank == 0:
            emit(MeasureProgress("load", 1, 1))

        def progress(phase: str, done: int, total: int) -> None:
            if rank == 0:
                emit(MeasureProgress(phase, done, total))

        figures = run_workload(
            model,
            vocab_size=_vocab(model),
            prompt_tokens=job.prompt_tokens,
            gen_tokens=job.gen_tokens,
            warmup_tokens=job.warmup_tokens,
            seed=job.seed,
            progress=progress,
        )
        if group is not None:
            # No rank leaves while another still needs it (under PP the first stage's
            # last sends can finish before the last stage has received them).
            mx.eval(mx.distributed.all_sum(mx.array(1.0), stream=mx.cpu))
        ran = time.perf_counter()
        kind, device = _device()
        layers = None
        if job.kind is ParallelKind.PIPELINE and group is not None:
            layers = [int(model.model.start_idx), int(model.model.end_idx)]
        emit(
            MeasureResult(
                MeasuredPeak(
                    model=job.display,
                    device_kind=kind,
                    device_name=device,
                    peak_bytes=figures.peak_bytes,
                    peak_kind="mx.get_peak_memory() of this rank (load + workload)",
                    inflight_mib=0,
                    prompt_tokens=job.prompt_tokens,
                    gen_tokens=job.gen_tokens,
                    synthetic_weights=job.synthetic,
                    load_seconds=round(load_s, 3),
                    prefill_tokens_per_s=round(figures.prefill_tokens_per_s, 2),
                    decode_tokens_per_s=round(figures.decode_tokens_per_s, 2),
                    torch_version="",
                    runtime_version=f"mlx {versions.mlx}, mlx-lm {versions.mlx_lm}",
                    timestamp=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                    vramscope_version=__version__,
                    extra=RankFields(
                        parallel=job.kind if group is not None else None,
                        rank=rank,
                        ranks=size,
                        layers=layers,
                        seconds={
                            "import": round(imported - _STARTED, 3),
                            "join": round(joined - imported, 3),
                            "load": round(load_s, 3),
                            "workload": round(ran - t0 - load_s, 3),
                        },
                    ).to_extra(),
                    warmup_tokens=job.warmup_tokens,
                    weights_bytes=int(weights),
                    engine=Engine.MLX,
                )
            )
        )
        return 0
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:400]
        oom = isinstance(exc, MemoryError) or "memory" in str(exc).lower()
        failure = FailureKind.OUT_OF_MEMORY if oom else FailureKind.INTERNAL
        emit(MeasureFailed(MeasurementFailure(failure, f"rank {rank} of {size}: {text}")))
        traceback.print_exc(file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """`python -m hip_backend.ranks.rank [--single] JOB.json`."""
    args = sys.argv[1:] if argv is None else argv
    single = bool(args) and args[0] == "--single"
    args = args[1:] if single else args
    if len(args) != 1:
        print("usage: python -m hip_backend.ranks.rank [--single] JOB.json", file=sys.stderr)
        return 2
    job = RankJob.from_json(Path(args[0]).read_text(encoding="utf-8"))
    # Dies with the vramscope that launched mlx.launch; the scratch folder goes with it.
    watch_parent(cleanup=lambda: shutil.rmtree(job.out_dir, ignore_errors=True))
    return run_rank(job, single)


if __name__ == "__main__":
    sys.exit(main())
