"""mlxcel's bench workload on the torch decoder: a warm-up pass, then a measured pass of
P prompt tokens and G greedy decode tokens (the constants and the prompt are both
engines': hip_backend/model/bench.py).

Prefill runs in chunks of at most 512 tokens, each followed by a host sync (mlx-lm
evaluates the cache after every chunk); every decode step reads its token on the
host. Those syncs are where the in-flight queue drains.
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


def attention_shapes(prompt_tokens: int, chunk: int = PREFILL_CHUNK) -> list[tuple[int, int]]:
    """`(queries, keys)` of each prefill chunk's attention that `run_pass` runs for a
    prompt of `prompt_tokens`: chunk i sees its own tokens and every earlier one."""
    return [
        (min(chunk, prompt_tokens - start), min(start + chunk, prompt_tokens))
        for start in range(0, prompt_tokens, chunk)
    ]


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
    chunks = [prompt[i : i + chunk] for i in range(0, len(prompt), chunk)]
    started = time.perf_counter()
    logits = None
    # Progress in tokens (as mlx-lm's prompt callback counts), from 0 so that the
    # parent sees each phase start.
    if progress is not None:
        progress(f"{phase}prefill", 0, len(prompt))
    prefilled = 0
    for piece in chunks:
        logits = model.forward(_tensor(piece, device), caches, queue)
        queue.sync()
        prefilled += len(piece)
        if progress is not None:
            progress(f"{phase}prefill", prefilled, len(prompt))
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
