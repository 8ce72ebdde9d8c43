"""mlxcel's bench workload, as both engines run it: the constants and the prompt.

A warm-up pass (a short prompt, then the request's warm-up tokens), then the measured
pass: P synthetic prompt tokens prefilled in chunks of at most `PREFILL_CHUNK`, then G
greedy decode tokens, each pass from a fresh cache, batch 1. The token ids are
deterministic (`synthetic_prompt`), the same in every process that runs the same
workload, so the torch engine, the mlx engine and every rank of a split load see the
same prompt. No torch or mlx here.
"""

from __future__ import annotations

PREFILL_CHUNK = 512
"""Largest prefill step (mlx-lm's `prefill_step_size`); mlxcel's bench uses the same."""
WARMUP_PROMPT_TOKENS = 8
"""Length of the warm-up prompt (mlxcel's bench warms up on a short chat prompt)."""


def synthetic_prompt(vocab_size: int, length: int, seed: int) -> list[int]:
    """Deterministic token ids spread over the vocabulary (memory does not depend on them)."""
    state = seed * 2654435761 + 12345
    out = []
    for _ in range(length):
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append((state >> 33) % vocab_size)
    return out
