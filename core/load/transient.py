"""The prefill step's short-lived buffers under mlx-lm, fitted to measured MLX peaks.

`generate_step` feeds the prompt in chunks of 2,048 tokens and evaluates only the
caches' state between chunks (the chunk's logits are never computed), so what one
chunk holds beside the weights and caches is one layer's work at a time. MLX's
`scaled_dot_product_attention` falls back to matmul, softmax, matmul where it has no
fused kernel (the CPU, and head sizes the fused kernels do not take): one copy of the
chunk's scores per head in the activations' dtype and a one-byte mask per pair.

The coefficients were fitted to 22 peaks (`mx.get_peak_memory` less the weights and
the caches) of bf16 models that mlx-lm built (llama, mistral, qwen2, qwen3, gemma2,
gemma3, phi3), on this CPU with mlx 0.32.4
(docs/benchmark_results/load-transient-cpu-2026-12-07.md): per query-key pair
`heads x 2 + 1` bytes, per chunk token 2 copies of the MLP's width and 30 of the
hidden size, the least that covers every one of those peaks. Every fitted term says
so; the MoE routing copies are not fitted yet and say that.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.load.caches import PREFILL_STEP, Schedule
from core.load.load import LoadTerm, Origin, TermKind

FITTED = "fitted to MLX CPU peaks of 7 dense bf16 families"
FIRST_MODEL = "first model from mlx-lm's code, not fitted to measured peaks"
SCORE_COPIES = 1
"""The scores, one copy per head in the activations' dtype (fitted: 17.2 bytes a pair
for 8 heads of bf16, against 17 = 8 x 2 + 1 for the mask)."""
HIDDEN_COPIES = 30
"""Copies of the hidden size one chunk token holds: 38.7 bytes at bf16 on llama
shapes (19.4 copies); gemma2, gemma3 and phi3 hold up to 8.9 copies more (their extra
norms, softcapping and fused projections), and 30 is the least whole number that
covers every measured peak."""
LOGIT_BYTES = 4 + 4
"""The last position's logits in float32 and `logsumexp`'s log-probabilities."""
MLP_COPIES = 2
"""Copies of the MLP's width one chunk token holds (fitted: 4.0 bytes at bf16)."""


@dataclass(frozen=True)
class TransientDims:
    """What the transient is sized by."""

    heads: int
    """Query heads of an attention layer (the scores' count)."""
    hidden: int
    intermediate: int
    """The dense MLP's width; for a MoE, the routed experts' width times the experts
    each token uses."""
    vocab: int
    dtype_bytes: int
    moe_top_k: int = 0
    """Experts per token (0: dense), for the routing copies of the chunk's tokens."""


def _largest_chunk(schedule: Schedule) -> int:
    """The most tokens one call takes."""
    full, last, _ = schedule.chunks
    return PREFILL_STEP if full else max(last, 1 if schedule.tokens else 0)


def widest_scores(schedule: Schedule, window: int | None) -> int:
    """The most query-key pairs one call's attention holds (chunk x keys seen), for a
    full layer (`window` None) or a sliding one: the last full chunk, the last short
    one, or a single token over the whole cache."""
    full, last, _ = schedule.chunks

    def keys(before: int, size: int) -> int:
        return before + size if window is None else min(before, window - 1) + size

    best = schedule.tokens
    if full:
        best = max(best, PREFILL_STEP * keys(PREFILL_STEP * (full - 1), PREFILL_STEP))
    if last:
        best = max(best, last * keys(PREFILL_STEP * full, last))
    return best


def prefill_terms(
    dims: TransientDims, schedule: Schedule, batch: int, windows: tuple[int | None, ...]
) -> tuple[LoadTerm, ...]:
    """The chunk's attention scores, its MLP (or the MoE's routed copies) and the
    last position's logits, as TRANSIENT terms."""
    if schedule.tokens == 0:
        return ()
    chunk = _largest_chunk(schedule)
    pairs = max((widest_scores(schedule, w) for w in windows), default=0)
    scores = batch * pairs * (dims.heads * SCORE_COPIES * dims.dtype_bytes + 1)
    mlp = batch * chunk * (dims.intermediate * MLP_COPIES + dims.hidden * HIDDEN_COPIES)
    mlp *= dims.dtype_bytes
    routed = batch * chunk * dims.moe_top_k * dims.hidden * dims.dtype_bytes
    logits = batch * dims.vocab * (dims.dtype_bytes + LOGIT_BYTES)
    terms = [
        LoadTerm(
            TermKind.TRANSIENT,
            scores,
            Origin.FITTED,
            f"prefill attention scores: {dims.heads} heads x {pairs:,} query-key pairs "
            f"and the mask ({FITTED})",
        ),
        LoadTerm(
            TermKind.TRANSIENT,
            mlp + routed,
            Origin.FITTED,
            f"prefill activations of one {chunk:,}-token chunk ({FITTED})"
            + (
                f"; {dims.moe_top_k} routed copies a token ({FIRST_MODEL})"
                if dims.moe_top_k
                else ""
            ),
        ),
        LoadTerm(
            TermKind.TRANSIENT,
            logits,
            Origin.ENGINE_RULE,
            f"logits of the last position, {dims.vocab:,} wide (mlx-lm's code)",
        ),
    ]
    return tuple(terms)
