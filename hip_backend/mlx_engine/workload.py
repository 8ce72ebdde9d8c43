"""mlxcel's bench workload on an mlx-lm model, in whatever process holds the model.

Loading is the caller's business (`mlx_lm.utils.load_model`, `sharded_load` in a
rank of `mlx.launch`, or hip_backend/mlx_engine/child.py's synthetic weights); this module
only runs the workload and reads MLX's memory counters. The usual sequence:

    import mlx.core as mx
    from hip_backend.mlx_engine.workload import reset_peak, run_workload

    reset_peak()                      # before the load, so the peak covers it
    model, config = load_model(path)  # or sharded_load(...)
    figures = run_workload(model, vocab_size=config["vocab_size"],
                           prompt_tokens=512, gen_tokens=128)
    figures.peak_bytes                # mx.get_peak_memory() over load + both passes

The workload: a warm-up pass (a short prompt and `warmup_tokens` greedy tokens),
then the measured pass (P synthetic prompt tokens, G greedy tokens), each from a
fresh `make_prompt_cache`, batch 1, through mlx-lm's own `generate_step`: the
prompt is prefilled in chunks of at most 512 tokens with the cache evaluated after
each chunk, then decoded greedily. KV is 16-bit, or mlx-lm's quantized KV cache
from the first token with `kv_bits=8` (the estimate's int8 KV mode). The cache ends
at P + G positions: the context the estimate is taken at.

Needs mlx and mlx-lm; both are imported inside the functions only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.measurement.request import DEFAULT_WARMUP_TOKENS
from hip_backend.model.bench import PREFILL_CHUNK, WARMUP_PROMPT_TOKENS, synthetic_prompt

KV_GROUP_SIZE = 64

PhaseProgress = Callable[[str, int, int], None]
"""`progress(phase, done, total)`: phase is `prefill` / `decode`, prefixed `warmup `."""
Sample = Callable[[], None]
"""Called after every prefill chunk and every decoded token (mlx_engine/footprint.py)."""


@dataclass(frozen=True)
class PassFigures:
    """One pass: its greedy tokens (the first from the prompt) and timings."""

    tokens: list[int]
    prefill_seconds: float
    decode_seconds: float


@dataclass(frozen=True)
class WorkloadFigures:
    """What the workload measured, in bytes and seconds.

    `peak_bytes` is mx.get_peak_memory() at the end: the high-water mark of MLX's
    allocated buffers since the last `reset_peak()` (the caller resets it before the
    load). `active_bytes` and `cache_bytes` are mx.get_active_memory() and
    mx.get_cache_memory() at the end, after the measured pass's cache was dropped.
    """

    peak_bytes: int
    active_bytes: int
    cache_bytes: int
    prompt_tokens: int
    gen_tokens: int
    warmup_tokens: int
    measured: PassFigures
    kv_bits: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def prefill_tokens_per_s(self) -> float:
        """Prompt tokens per second of the measured pass."""
        seconds = self.measured.prefill_seconds
        return self.prompt_tokens / seconds if seconds > 0 else 0.0

    @property
    def decode_tokens_per_s(self) -> float:
        """Generated tokens per second of the measured pass (0 when G = 0)."""
        seconds = self.measured.decode_seconds
        return self.gen_tokens / seconds if seconds > 0 and self.gen_tokens else 0.0


def reset_peak() -> None:
    """Drop MLX's buffer cache and reset its peak counter (call it right before the load)."""
    import mlx.core as mx

    mx.synchronize()
    mx.clear_cache()
    mx.reset_peak_memory()


def run_pass(
    model: Any,
    prompt: list[int],
    gen_tokens: int,
    *,
    kv_bits: int | None = None,
    chunk: int = PREFILL_CHUNK,
    phase: str = "",
    progress: PhaseProgress | None = None,
    sample: Sample | None = None,
) -> PassFigures:
    """Prefill `prompt` and decode `gen_tokens` greedy tokens from a fresh prompt cache."""
    import mlx.core as mx
    from mlx_lm.generate import generate_step
    from mlx_lm.models.cache import make_prompt_cache

    if not prompt:
        raise ValueError("the prompt needs at least one token")

    def on_prompt(done: int, total: int) -> None:
        if sample is not None:  # before mlx-lm clears the cache after the chunk
            sample()
        if progress is not None:
            progress(f"{phase}prefill", done, total)

    cache = make_prompt_cache(model)
    steps = generate_step(
        mx.array(prompt, dtype=mx.uint32),
        model,
        stream=mx.new_stream(mx.default_device()),
        max_tokens=gen_tokens,
        prompt_cache=cache,
        prefill_step_size=chunk,
        kv_bits=kv_bits,
        kv_group_size=KV_GROUP_SIZE,
        quantized_kv_start=0,
        prompt_progress_callback=on_prompt,
    )
    started = time.perf_counter()
    prefill_seconds: float | None = None
    tokens: list[int] = []
    for token, _logprobs in steps:
        if prefill_seconds is None:  # the first token is the prompt's: prefill is done
            prefill_seconds = time.perf_counter() - started
            started = time.perf_counter()
            if progress is not None:
                progress(f"{phase}decode", 0, gen_tokens)
        tokens.append(int(token))
        if sample is not None:  # before mlx-lm's periodic clear of the cache
            sample()
        if progress is not None:
            progress(f"{phase}decode", len(tokens), gen_tokens)
    mx.synchronize()
    elapsed = time.perf_counter() - started
    if prefill_seconds is None:  # G = 0: the generator only ran the prompt
        prefill_seconds, elapsed = elapsed, 0.0
    del cache
    return PassFigures(tokens, prefill_seconds, elapsed)


def run_workload(
    model: Any,
    *,
    vocab_size: int,
    prompt_tokens: int,
    gen_tokens: int,
    warmup_tokens: int = DEFAULT_WARMUP_TOKENS,
    kv_bits: int | None = None,
    seed: int = 0,
    chunk: int = PREFILL_CHUNK,
    progress: PhaseProgress | None = None,
    sample: Sample | None = None,
) -> WorkloadFigures:
    """The warm-up pass, then the measured pass; MLX's counters read at the end.

    Token ids are deterministic (`synthetic_prompt`), the same in every process that
    runs the same workload, so ranks of a sharded run agree without communicating.
    """
    import mlx.core as mx

    warm_prompt = synthetic_prompt(vocab_size, min(WARMUP_PROMPT_TOKENS, prompt_tokens), seed + 1)
    run_pass(
        model,
        warm_prompt,
        warmup_tokens,
        kv_bits=kv_bits,
        chunk=chunk,
        phase="warmup ",
        progress=progress,
        sample=sample,
    )
    measured = run_pass(
        model,
        synthetic_prompt(vocab_size, prompt_tokens, seed),
        gen_tokens,
        kv_bits=kv_bits,
        chunk=chunk,
        progress=progress,
        sample=sample,
    )
    mx.synchronize()
    if sample is not None:
        sample()
    return WorkloadFigures(
        peak_bytes=int(mx.get_peak_memory()),
        active_bytes=int(mx.get_active_memory()),
        cache_bytes=int(mx.get_cache_memory()),
        prompt_tokens=prompt_tokens,
        gen_tokens=gen_tokens,
        warmup_tokens=warmup_tokens,
        measured=measured,
        kv_bits=kv_bits,
    )


def weights_bytes(model: Any) -> int:
    """Bytes of the model's parameters (every array it holds, quantized words included)."""
    from mlx.utils import tree_flatten

    return sum(int(v.nbytes) for _, v in tree_flatten(model.parameters()))
