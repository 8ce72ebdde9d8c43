"""The explorer's split-load view: every rank's terms side by side, and the plan's verdict.

Pure, given the tensor list: `core.parallel.plan` splits the model by mlx-lm's rules
once per (model, plan), then each state is sized in microseconds. The table has
one column per rank; every rank gets the explorer's available memory, unless the
Devices row lists one size per device (`24GB,16GB`, read as `inspect --memory-limit
A,B` reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import ShardingError
from core.estimate.available import AvailableMemory
from core.model.snapshot import ModelSnapshot
from core.parallel.plan import (
    ParallelEstimate,
    ParallelPlan,
    ParallelSplit,
    Tensor,
    estimate_split,
    largest_plan_context,
    parse_rank_limits,
    split_model,
)
from core.parallel.sharding import ParallelKind
from core.units import format_bytes_short
from tui.model.state import ExplorerState


def plan_of(state: ExplorerState) -> ParallelPlan | None:
    """The split the state asks for, or None for one device."""
    if state.devices < 2:
        return None
    return ParallelPlan(ParallelKind(state.split), state.devices)


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

    estimate: ParallelEstimate
    largest_context: int | None
    rows: tuple[tuple[str, tuple[str, ...]], ...]
    """(term, one cell per rank)."""
    verdict: str
    fits: bool


def split_for(
    model: ModelSnapshot, tensors: Sequence[Tensor] | None, plan: ParallelPlan
) -> ParallelSplit | str:
    """The model split by mlx-lm's rules, or the one-line reason it cannot be."""
    if tensors is None:
        return f"{plan.kind.label}: no tensor shapes for this model (safetensors headers needed)"
    try:
        return split_model(model, tensors, plan)
    except ShardingError as exc:
        return str(exc)


def parallel_view(
    model: ModelSnapshot,
    split: ParallelSplit,
    state: ExplorerState,
    available: AvailableMemory,
    limit: int,
    rank_available: Sequence[int] | None = None,
) -> ParallelView:
    """Every rank at the state's workload against its own available memory (the
    Available value when `rank_available` is None), and the largest context the plan fits."""
    settings = state.settings(available)
    pe = estimate_split(model, split, state.workload(), settings, rank_available)
    largest = largest_plan_context(
        model, split, state.workload(), settings, rank_available, limit=limit
    )
    ranks = pe.ranks

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
            tuple(
                "FITS" if r.fits else f"OVER {format_bytes_short(r.overflow_bytes)}" for r in ranks
            ),
        ),
    )
    if pe.fits:
        verdict = f"PLAN FITS: all {len(ranks)} ranks"
    else:
        verdict = "PLAN DOES NOT FIT: rank " + ", ".join(str(r) for r in pe.failing_ranks)
    return ParallelView(pe, largest, rows, verdict, pe.fits)
