"""mlxcel's bench workload on the torch decoder: a warm-up pass, then a measured pass of
P prompt tokens and G greedy decode tokens (the constants and the prompt are both
engines': hip_backend/model/bench.py).

Prefill runs as mlx-lm's `generate_step` does: chunks of at most 512 tokens that stop
short of the last token, each computing only what the cache needs and followed by a host
sync (mlx-lm evaluates the caches after every chunk), then the last token alone through
the whole model for the first logits; every decode step reads its token on the host.
Those syncs are where the in-flight queue drains.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hip_backend.model.bench import PREFILL_CHUNK
from hip_backend.torch_engine.decoder import DecoderModel
from hip_backend.torch_engine.device import synchronize
from hip_backend.torch_engine.inflight import InflightQueue

if TYPE_CHECKING:
    import torch

PhaseProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class PassResult:
    """One pass: the greedy tokens (the first from the prefill logits) and timings."""

    tokens: list[int]
    prefill_seconds: float
    decode_seconds: float


def _tensor(ids: list[int], device: torch.device) -> torch.Tensor:
    import torch

    return torch.tensor([ids], dtype=torch.long, device=device)


def prefill_chunks(prompt_tokens: int, chunk: int = PREFILL_CHUNK) -> list[int]:
    """The sizes of the prefill chunks before the last token, as mlx-lm's
    `generate_step` cuts a prompt: while more than one token is left, the next
    `min(chunk, left - 1)`; the last token then runs alone through the whole model."""
    sizes = []
    left = prompt_tokens
    while left > 1:
        sizes.append(min(chunk, left - 1))
        left -= sizes[-1]
    return sizes


def attention_shapes(prompt_tokens: int, chunk: int = PREFILL_CHUNK) -> list[tuple[int, int]]:
    """`(queries, keys)` of each prefill chunk's attention that `run_pass` runs for a
    prompt of `prompt_tokens`: chunk i sees its own tokens and every earlier one (the
    last token's step is a single query, as a decode step)."""
    shapes = []
    start = 0
    for size in prefill_chunks(prompt_tokens, chunk):
        shapes.append((size, start + size))
        start += size
    return shapes


def run_pass(
    model: DecoderModel,
    queue: InflightQueue,
    prompt: list[int],
    gen_tokens: int,
    *,
    phase: str = "",
    progress: PhaseProgress | None = None,
    chunk: int = PREFILL_CHUNK,
) -> PassResult:
    """Prefill `prompt` in chunks, then decode `gen_tokens` greedily from a fresh cache."""
    if not prompt:
        raise ValueError("the prompt needs at least one token")
    device = model.device
    caches = model.new_cache(queue)
    started = time.perf_counter()
    # Progress in tokens (as mlx-lm's prompt callback counts), from 0 so that the
    # parent sees each phase start.
    if progress is not None:
        progress(f"{phase}prefill", 0, len(prompt))
    prefilled = 0
    for size in prefill_chunks(len(prompt), chunk):
        model.prefill(_tensor(prompt[prefilled : prefilled + size], device), caches, queue)
        queue.sync()
        prefilled += size
        if progress is not None:
            progress(f"{phase}prefill", prefilled, len(prompt))
    logits = model.forward(_tensor(prompt[prefilled:], device), caches, queue)
    queue.sync()
    if progress is not None:
        progress(f"{phase}prefill", len(prompt), len(prompt))
    assert logits is not None
    next_token = int(logits[0].argmax().item())
    synchronize(device)
    prefill_seconds = time.perf_counter() - started
    tokens = [next_token]
    started = time.perf_counter()
    if progress is not None:
        progress(f"{phase}decode", 0, gen_tokens)
    for step in range(gen_tokens):
        # Each decode step runs the last token, so the cache ends at P + G positions:
        # the context the estimate is taken at.
        logits = model.forward(_tensor([next_token], device), caches, queue)
        next_token = int(logits[0].argmax().item())
        queue.sync()
        tokens.append(next_token)
        if progress is not None:
            progress(f"{phase}decode", step + 1, gen_tokens)
    synchronize(device)
    decode_seconds = time.perf_counter() - started
    del caches
    return PassResult(tokens, prefill_seconds, decode_seconds)
