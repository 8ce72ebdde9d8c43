"""From state to what the widgets show: the estimate, its view, the chart data, the peak.

Pure functions over an already-read model; the screen calls them on every change
and hands the results to its widgets. Nothing here touches a widget or a file.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from core.available import AvailableMemory
from core.backend import Backend
from core.estimate import MemoryEstimate, Workload, estimate
from core.measurement import MeasuredPeak
from core.model import ModelSnapshot
from core.solve import largest_fitting_context, largest_fitting_inflight
from tui.breakdown_rows import (
    INFLIGHT_OFF_HINT,
    breakdown_rows,
    context_limit_text,
    inflight_limit_text,
    verdict,
)
from tui.scales import FALLBACK_MAX_TOKENS
from tui.state import ExplorerState
from tui.widgets.breakdown import EstimateView
from tui.widgets.context_chart import ChartData


@dataclass(frozen=True)
class ExplorerViews:
    """One estimate and everything derived from it."""

    estimate: MemoryEstimate
    breakdown: EstimateView
    chart: ChartData


def build_views(
    snapshot: ModelSnapshot,
    state: ExplorerState,
    available: AvailableMemory,
    trained: int | None,
    points: tuple[tuple[int, int], ...] = (),
) -> ExplorerViews:
    """The estimate, the breakdown with both limits, and the chart's data (with `points`,
    measured peaks as (context, bytes))."""
    settings = state.settings(available)
    workload = state.workload()
    est = estimate(snapshot, workload, settings)
    view = EstimateView(
        rows=tuple(breakdown_rows(est, available)),
        verdict=verdict(est),
        context_limit=context_limit_text(
            largest_fitting_context(snapshot, workload, settings), trained
        ),
        inflight_limit=inflight_limit_text(
            largest_fitting_inflight(snapshot, workload, settings), state.backend.label
        ),
        warnings=snapshot.warnings,
    )

    def totals(contexts: Sequence[int]) -> list[int]:
        return [
            estimate(snapshot, replace(workload, max_tokens=n), settings).total_bytes
            for n in contexts
        ]

    chart = ChartData(
        totals=totals,
        top_tokens=trained or FALLBACK_MAX_TOKENS,
        current_tokens=state.max_tokens,
        available=available.bytes,
        # Equal keys reuse the chart's totals: moving only the context moves only the marker.
        key=(id(snapshot), replace(workload, max_tokens=0), settings),
        points=points,
    )
    return ExplorerViews(est, view, chart)


def peak_estimate(
    peak: MeasuredPeak, snapshot: ModelSnapshot, state: ExplorerState, available: AvailableMemory
) -> int:
    """The estimate for a measured run: context P + G and the run's in-flight budget.

    The measurement engine applies ROCm's in-flight bound on every device, so the
    comparison uses mlxcel's ROCm formula whatever backend is on screen.
    """
    rocm = replace(state.settings(available), backend=Backend.ROCM, inflight_mib=peak.inflight_mib)
    return estimate(snapshot, Workload(max_tokens=peak.context_tokens), rocm).total_bytes


def chart_points(
    records: Sequence[MeasuredPeak], names: Collection[str], state: ExplorerState
) -> tuple[tuple[int, int], ...]:
    """Measured peaks comparable with the curve on screen, as (context P + G, bytes).

    Runs of this model with the budget on screen; none when the curve is for a batch
    or KV dtype no run measures (runs are batch 1, fp16 KV). The device is not
    matched: the engine applies ROCm's bound everywhere, so a CPU run is a point
    on the same curve.
    """
    if state.batch != 1 or state.kv_int8:
        return ()
    return tuple(
        (p.context_tokens, p.peak_bytes)
        for p in records
        if p.model in names and p.inflight_mib == state.inflight_mib
    )


def inflight_hint(state: ExplorerState) -> tuple[str, str]:
    """The line under the in-flight slider, and its style class ("" hides it)."""
    if not state.backend.has_inflight_reserve:
        return "inactive: only ROCm builds reserve it", "-inactive"
    if state.inflight_mib == 0:
        return INFLIGHT_OFF_HINT, "-off"
    return "", ""


def tokens_hint(state: ExplorerState, model_known: bool, trained: int | None) -> tuple[str, str]:
    """The line under the token slider: an unknown or an exceeded trained context."""
    if model_known and trained is None:
        return f"trained context unknown; slider tops at {FALLBACK_MAX_TOKENS:,}", ""
    if trained is not None and state.max_tokens > trained:
        return f"beyond the trained context ({trained:,} tokens)", "-warn"
    return "", ""
