"""One rank of a tensor- or pipeline-parallel MLX measurement (run by `mlx.launch`).

`python -m hip_backend.mlx_ranks JOB.json` on every rank: joins the ring group
(`mx.distributed.init(backend="ring", strict=True)`, which reads `MLX_RANK` and
`MLX_HOSTFILE` from mlx.launch), loads the model the way mlx-lm's
`sharded_load` does (`load_model(lazy=True, strict=False)`, then
`model.shard(group)` or `model.model.pipeline(group)`, `mx.eval` of the
parameters and an `all_sum` barrier; the tokenizer and downloads are skipped),
or builds random weights of the real shapes from config.json when there are
none, runs the workload (a short warm-up, P prompt tokens in 512-token
chunks, G greedy decode tokens; every rank runs the same steps, as the
collectives require) and writes its own `mx.get_peak_memory()` to
`OUT_DIR/rank-<r>.jsonl` as protocol lines (core.measurement events).

A minimal workload of its own: to be replaced by hip_backend/mlx_workload.py
once that lands (see the report of issue 12).
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
import time
import traceback
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import IO, Any

from core import __version__
from core.measurement import (
    FailureKind,
    MeasuredPeak,
    MeasureEvent,
    MeasureFailed,
    MeasurementFailure,
    MeasureProgress,
    MeasureResult,
    encode_event,
)

_STARTED = time.perf_counter()
PREFILL_CHUNK = 512
WARMUP_PROMPT_TOKENS = 16
RANK_FILE = "rank-{rank}.jsonl"
SINGLE_FILE = "single.jsonl"


@dataclass(frozen=True)
class RankJob:
    """What every rank reads from the job file."""

    display: str
    kind: str
    """`tp` or `pp`."""
    ranks: int
    out_dir: str
    folder: str | None = None
    config_text: str | None = None
    """config.json text for random weights (a profile, or `synthetic`)."""
    prompt_tokens: int = 512
    gen_tokens: int = 128
    warmup_tokens: int = 20
    seed: int = 0

    def to_json(self) -> str:
        """The job file's text."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RankJob:
        """Parse a job file (ValueError on anything malformed)."""
        data: Any = json.loads(text)
        if not isinstance(data, dict) or set(data) - {f.name for f in fields(cls)}:
            raise ValueError("not a rank job")
        job = cls(**data)
        if job.kind not in ("tp", "pp") or (job.folder is None) == (job.config_text is None):
            raise ValueError("a rank job needs kind tp|pp and exactly one of folder, config_text")
        return job


class _RankOut:
    """Protocol lines to this rank's file, flushed per line (the parent polls it)."""

    def __init__(self, path: Path) -> None:
        self._stream: IO[str] = path.open("w", encoding="utf-8", buffering=1)

    def __call__(self, event: MeasureEvent) -> None:
        self._stream.write(encode_event(event) + "\n")
        self._stream.flush()


def _load(job: RankJob, group: Any) -> tuple[Any, bool]:
    """The rank's share of the model, evaluated; (model, synthetic weights)."""
    import mlx.core as mx
    from mlx_lm.utils import _get_classes, load_model

    if job.folder is not None:
        model, _ = load_model(Path(job.folder), lazy=True, strict=False)
        synthetic = False
    else:
        assert job.config_text is not None
        config = json.loads(job.config_text)
        mx.random.seed(job.seed)
        model_class, args_class = _get_classes(config=config)
        model = model_class(args_class.from_dict(config))  # lazy random init
        synthetic = True
    if group is not None:
        if job.kind == "tp":
            model.shard(group)
        else:
            model.model.pipeline(group)
    mx.eval(model.parameters())
    if group is not None:
        mx.eval(mx.distributed.all_sum(mx.array(1.0), stream=mx.cpu))  # sharded_load's barrier
    return model, synthetic


def _vocab(model: Any) -> int:
    args = getattr(model, "args", None)
    return int(getattr(args, "vocab_size", 0) or 32)


def _forward(model: Any, tokens: Any, cache: Any) -> Any:
    import mlx.core as mx

    logits = model(tokens, cache=cache)
    nxt = mx.argmax(logits[:, -1, :], axis=-1)
    mx.eval(nxt, [c.state for c in cache])
    return nxt


def _run_pass(
    model: Any, prompt: int, gen: int, phase: str, emit: Any, rank0: bool
) -> tuple[float, float]:
    """Prefill `prompt` tokens in chunks, decode `gen` greedily; (prefill s, decode s)."""
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache

    vocab = _vocab(model)
    ids = mx.array([[(7 * i + 3) % vocab for i in range(prompt)]], dtype=mx.int32)
    cache = make_prompt_cache(model)
    t0 = time.perf_counter()
    nxt = None
    for start in range(0, prompt, PREFILL_CHUNK):
        nxt = _forward(model, ids[:, start : start + PREFILL_CHUNK], cache)
        if rank0:
            emit(MeasureProgress(f"{phase}prefill", min(start + PREFILL_CHUNK, prompt), prompt))
    t1 = time.perf_counter()
    for i in range(gen):
        assert nxt is not None
        nxt = _forward(model, nxt[:, None], cache)
        if rank0 and (i + 1 == gen or i % 8 == 0):
            emit(MeasureProgress(f"{phase}decode", i + 1, gen))
    return t1 - t0, time.perf_counter() - t1


def _mlx_version() -> str:
    from importlib.metadata import version

    return version("mlx")


def _device() -> tuple[str, str]:
    import mlx.core as mx

    if mx.default_device() == mx.cpu:
        return "cpu", f"MLX CPU ({platform.machine()})"
    return "gpu", f"MLX GPU ({mx.device_info().get('device_name', 'unknown')})"


def run_rank(job: RankJob, single: bool = False) -> int:
    """Join the group, load, run, write this rank's result; the exit status.

    `single`: no group at all; the same load and workload in one process (the
    independent single-device run a split load is compared with), to `single.jsonl`.
    """
    import mlx.core as mx
    import mlx_lm.models.cache
    import mlx_lm.utils  # noqa: F401  (imported before the ring is up: it takes seconds)

    imported = time.perf_counter()
    group = None if single else mx.distributed.init(backend="ring", strict=True)
    joined = time.perf_counter()
    rank, size = (0, 1) if group is None else (group.rank(), group.size())
    name = SINGLE_FILE if group is None else RANK_FILE.format(rank=rank)
    emit = _RankOut(Path(job.out_dir) / name)
    try:
        if group is not None and size != job.ranks:
            raise RuntimeError(f"the group has {size} ranks, the job asked for {job.ranks}")
        t0 = time.perf_counter()
        model, synthetic = _load(job, group)
        load_s = time.perf_counter() - t0
        weights = mx.get_active_memory()
        if rank == 0:
            emit(MeasureProgress("load", 1, 1))
        if job.warmup_tokens:
            _run_pass(model, WARMUP_PROMPT_TOKENS, job.warmup_tokens, "warmup ", emit, rank == 0)
        prefill_s, decode_s = _run_pass(
            model, job.prompt_tokens, job.gen_tokens, "", emit, rank == 0
        )
        ran = time.perf_counter()
        peak = mx.get_peak_memory()
        kind, name = _device()
        layers = None
        if job.kind == "pp" and group is not None:
            layers = [int(model.model.start_idx), int(model.model.end_idx)]
        emit(
            MeasureResult(
                MeasuredPeak(
                    model=job.display,
                    device_kind=kind,
                    device_name=name,
                    peak_bytes=int(peak),
                    peak_kind="mx.get_peak_memory() of this rank (load + workload)",
                    inflight_mib=0,
                    prompt_tokens=job.prompt_tokens,
                    gen_tokens=job.gen_tokens,
                    synthetic_weights=synthetic,
                    load_seconds=round(load_s, 3),
                    prefill_tokens_per_s=round(job.prompt_tokens / prefill_s, 2)
                    if prefill_s > 0
                    else 0.0,
                    decode_tokens_per_s=round(job.gen_tokens / decode_s, 2)
                    if decode_s > 0 and job.gen_tokens
                    else 0.0,
                    torch_version="",
                    runtime_version=f"mlx {_mlx_version()}",
                    timestamp=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                    vramscope_version=__version__,
                    extra={
                        "parallel": job.kind if group is not None else None,
                        "rank": rank,
                        "ranks": size,
                        "layers": layers,
                        "seconds": {
                            "import": round(imported - _STARTED, 3),
                            "join": round(joined - imported, 3),
                            "load": round(load_s, 3),
                            "workload": round(ran - joined - load_s, 3),
                        },
                    },
                    warmup_tokens=job.warmup_tokens,
                    weights_bytes=int(weights),
                    engine="mlx",
                )
            )
        )
        return 0
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:400]
        oom = isinstance(exc, MemoryError) or "memory" in str(exc).lower()
        kind_ = FailureKind.OUT_OF_MEMORY if oom else FailureKind.INTERNAL
        emit(MeasureFailed(MeasurementFailure(kind_, f"rank {rank}: {text}")))
        traceback.print_exc(file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """`python -m hip_backend.mlx_ranks [--single] JOB.json`."""
    args = sys.argv[1:] if argv is None else argv
    single = bool(args) and args[0] == "--single"
    args = args[1:] if single else args
    if len(args) != 1:
        print("usage: python -m hip_backend.mlx_ranks [--single] JOB.json", file=sys.stderr)
        return 2
    job = RankJob.from_json(Path(args[0]).read_text(encoding="utf-8"))
    return run_rank(job, single)


if __name__ == "__main__":
    sys.exit(main())
