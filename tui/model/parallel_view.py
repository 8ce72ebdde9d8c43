"""The explorer's split-load view: every rank's terms side by side, and the plan's verdict.

Pure: a rendering of the split's `Answer` (`core.answer`: the model split by mlx-lm's
rules once per (model, plan), then each state sized in microseconds). The table has
one column per rank; every rank gets the explorer's available memory, unless the
Devices row lists one size per device (`24GB,16GB`, read as `inspect --memory-limit
A,B` reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.answer.answer import Answer
from core.answer.verdict import Verdict, verdict_words
from core.errors import ShardingError
from core.parallel.plan import parse_rank_limits
from core.units import format_bytes_short
from tui.model.state import ExplorerState


def rank_limits(state: ExplorerState) -> list[int] | None:
    """Each rank's available memory from the Devices row's list (None: blank, every rank
    gets the Available value); raises ShardingError naming the bad entry."""
    try:
        return parse_rank_limits(state.device_memory, state.devices)
    except ShardingError as exc:
        raise ShardingError(str(exc).replace("--memory-limit:", "per-device memory:", 1)) from None


def per_device_problem(state: ExplorerState) -> str:
    """Why the Per device list does not read ("" when it does, and when it is blank)."""
    try:
        rank_limits(state)
    except ShardingError as exc:
        return str(exc)
    return ""


@dataclass(frozen=True)
class ParallelView:
    """What the ranks panel shows."""

    answer: Answer
    rows: tuple[tuple[str, tuple[str, ...]], ...]
    """(term, one cell per rank)."""
    verdict: str
    fits: bool
    rank_fits: tuple[bool, ...] = ()
    """Each rank's verdict as a value (the `Verdict` row's style follows it, never its
    words)."""

    @property
    def largest_context(self) -> str:
        """`largest context that fits the plan: 32,768 tokens, the trained context (...)`."""
        if self.answer.context.tokens is None:
            return "no context fits the plan"
        return f"largest context that fits the plan: {self.answer.context.words}"


def parallel_view(plan: Answer) -> ParallelView:
    """Every rank of a split's answer against its own available memory, its verdict and
    the largest context the plan fits (capped at the trained context)."""
    ranks = plan.ranks

    def cells(values: Sequence[int]) -> tuple[str, ...]:
        return tuple(format_bytes_short(v) for v in values)

    holds = tuple(
        f"layers {r.layers[0]}-{r.layers[1] - 1}" if r.layers else f"{r.kv_heads} KV heads"
        for r in ranks
    )
    rows = (
        ("Holds", holds),
        ("Weights", cells([r.estimate.weights_bytes for r in ranks])),
        ("KV cache", cells([r.estimate.kv_bytes for r in ranks])),
        ("Activation", cells([r.estimate.activation_bytes for r in ranks])),
        ("Allocator", cells([r.estimate.allocator_overhead_bytes for r in ranks])),
        ("In-flight", cells([r.estimate.backend_inflight_bytes for r in ranks])),
        ("Total", cells([r.estimate.total_bytes for r in ranks])),
        ("Load peak", cells([r.load_peak_bytes for r in ranks])),
        ("Available", cells([r.estimate.available_bytes for r in ranks])),
        (
            "Verdict",
            tuple(verdict_words(Verdict.of_rank(r), detail=True) for r in ranks),
        ),
    )
    fits = bool(plan.fits)
    verdict = verdict_words(plan.verdict, detail=True)
    if plan.past_trained and plan.trained is not None:
        verdict += f" (at {plan.question.workload.max_tokens:,} tokens: past the trained context)"
    rank_fits = tuple(bool(Verdict.of_rank(r).fits) for r in ranks)
    return ParallelView(plan, rows, verdict, fits, rank_fits)
