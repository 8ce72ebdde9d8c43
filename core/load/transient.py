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

Held against MLX peaks of 11 families taken through the mlx engine
(docs/benchmark_results/load-peaks-cpu-2026-12-07.md), three rules go past the hidden
size, each from the module's code and a measured shape: queries wider than the hidden
size (qwen3, gemma: heads x head size) add 6 copies of the excess a token; gpt-oss's
attention sinks and its sliding layers' array masks add a copy of the scores each; and
a linear-attention layer (qwen3_next), whose recurrence MLX runs op by op wherever
Metal is absent, holds up to one state a chunk token.
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
QUERY_COPIES = 6
"""Copies of the queries' width past the hidden size one chunk token holds (the 30
above were measured where heads x head size = hidden): the projection, rope, attention
output and its transpose (measured 5.5 on a llama with the head size doubled, bf16,
P 448)."""
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
    query_width: int = 0
    """Heads x head size of the queries (0: the hidden size)."""
    score_extra_copies: int = 0
    """Copies of the scores the family's attention holds beyond one at every layer
    (attention sinks)."""
    window_score_copies: int = 0
    """Further copies at the sliding layers, whose mask is an array (mlx-lm builds one
    where the window is shorter than the keys; a full layer's is `"causal"`)."""
    recurrent_state: int = 0
    """Bytes of one linear-attention layer's state (0: none): MLX's ops path of the
    recurrence (every backend without Metal) holds up to one per chunk token."""


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

    def copies_at(window: int | None) -> int:
        extra = dims.window_score_copies if window is not None else 0
        return SCORE_COPIES + dims.score_extra_copies + extra

    # The widest layer's scores: a full layer's, or a sliding one's with its array mask.
    scores, pairs, copies = max(
        (
            (batch * p * (dims.heads * copies_at(w) * dims.dtype_bytes + 1), p, copies_at(w))
            for w in windows
            for p in (widest_scores(schedule, w),)
        ),
        default=(0, 0, SCORE_COPIES),
    )
    # A linear-attention layer has no scores: its recurrence over the chunk, one layer
    # at a time like the attention, so the larger of the two.
    recurrence = batch * chunk * dims.recurrent_state
    wider = max(0, dims.query_width - dims.hidden)
    width = dims.intermediate * MLP_COPIES + dims.hidden * HIDDEN_COPIES + wider * QUERY_COPIES
    mlp = batch * chunk * width * dims.dtype_bytes
    routed = batch * chunk * dims.moe_top_k * dims.hidden * dims.dtype_bytes
    logits = batch * dims.vocab * (dims.dtype_bytes + LOGIT_BYTES)
    extra = f", {copies} copies" if copies > 1 else ""
    attention = LoadTerm(
        TermKind.TRANSIENT,
        scores,
        Origin.FITTED,
        f"prefill attention scores: {dims.heads} heads x {pairs:,} query-key pairs{extra} "
        f"and the mask ({FITTED})",
    )
    if recurrence > scores:
        attention = LoadTerm(
            TermKind.TRANSIENT,
            recurrence,
            Origin.ENGINE_RULE,
            f"prefill linear-attention recurrence: one {dims.recurrent_state:,}-byte state "
            f"a token of the {chunk:,}-token chunk (mlx-lm's gated_delta_ops, the path "
            "without Metal; measured 0.66-0.71 of it on this CPU)",
        )
    terms = [
        attention,
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
