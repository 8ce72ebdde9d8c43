"""From state to what the widgets show: the estimate, its view, the chart data, the peak.

Pure functions over an already-read model; the screen calls them on every change
and hands the results to its widgets. Nothing here touches a widget or a file.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from core.answer.answer import WHAT_IF_RULE, Answer, WhatIf
from core.answer.held_against import held_against_answer
from core.answer.verdict import verdict_words
from core.catalog.entry import CatalogEntry
from core.estimate.available import AvailableMemory
from core.estimate.estimate import EstimateSettings, KvCacheMode, MemoryEstimate, Workload, estimate
from core.estimate.snapshot import ModelSnapshot
from core.estimate.weights import WeightsSource
from core.measurement.history import HistoryRead
from core.measurement.result import MeasuredPeak
from core.units import format_bytes_short
from tui.model.chart_data import ENGINE_MARKS, MEASURED_MARK, ChartData, Point
from tui.model.command_lines import mlxcel_command, vramscope_command
from tui.model.control_specs import INFLIGHT_MIB
from tui.model.measure_plan import model_names
from tui.model.measure_state import Measurements, PanelView, result_words, run_differences
from tui.model.names import model_arg
from tui.model.rows import (
    INFLIGHT_OFF_HINT,
    BreakdownRow,
    EstimateView,
    LoadColumn,
    RowKey,
    breakdown_rows,
    inflight_limit_text,
)
from tui.model.scales import FALLBACK_MAX_TOKENS, short_tokens
from tui.model.sizing import mlxcel_sizing, sizing_line
from tui.model.split_words import launch_command, memory_limit_text, with_plan_flag
from tui.model.state import ExplorerState


@dataclass(frozen=True)
class ExplorerViews:
    """One estimate and everything derived from it."""

    estimate: MemoryEstimate
    breakdown: EstimateView
    chart: ChartData


def what_if_rows(rows: Sequence[BreakdownRow], what_if: WhatIf) -> tuple[BreakdownRow, ...]:
    """The breakdown of a what-if: its weights and total say whose figures they are."""
    out = []
    for row in rows:
        if row.key is RowKey.WEIGHTS:
            row = replace(
                row,
                note=f"vramscope what-if {what_if.quantization.word} ({WHAT_IF_RULE}), not "
                f"mlxcel's; stored: {format_bytes_short(what_if.stored_weights_bytes)}",
            )
        elif row.key is RowKey.TOTAL:
            row = replace(row, note="mlxcel's formula over vramscope's what-if weights")
        out.append(row)
    return tuple(out)


def build_views(
    found: Answer, held_against_calibrated: bool = False, points: tuple[Point, ...] = ()
) -> ExplorerViews:
    """The breakdown of one device's answer (its rows, both limits, the calibrated verdict
    where a calibration applies to the device, why not where none does) and the chart's
    data (with `points`, measured peaks)."""
    est = found.estimate
    q = found.question
    available = q.device.available
    rows = tuple(breakdown_rows(est, available))
    cal = found.calibrated
    load = found.load
    view = EstimateView(
        rows=what_if_rows(rows, found.what_if) if found.what_if else rows,
        verdict=found.verdict,
        context_limit=context_words(found),
        inflight_limit=inflight_limit_text(found.inflight_limit, q.device.backend.label),
        warnings=found.warnings,
        sizing=_sizing(found.snapshot, q.settings, q.workload),
        calibrated=cal if cal is not None and cal.calibration is not None else None,
        calibration_note=cal.reason if cal is not None else "",
        held_against_calibrated=held_against_calibrated,
        load=(
            LoadColumn(load, available.bytes, est.fits)
            if load is not None and found.load_fits is not None
            else None
        ),
    )
    snapshot, workload, settings = found.snapshot, q.workload, q.settings

    def totals(contexts: Sequence[int]) -> list[int]:
        return [
            estimate(snapshot, replace(workload, max_tokens=n), settings).total_bytes
            for n in contexts
        ]

    trained = found.trained
    chart = ChartData(
        totals=totals,
        top_tokens=trained.tokens if trained else FALLBACK_MAX_TOKENS,
        current_tokens=workload.max_tokens,
        available=available.bytes,
        # Equal keys reuse the chart's totals: moving only the context moves only the marker.
        key=(id(snapshot), replace(workload, max_tokens=0), settings),
        points=points,
    )
    return ExplorerViews(est, view, chart)


def context_words(found: Answer) -> str:
    """`Largest context that fits` in words: by the load where there is one (mlxcel's
    beside it when the two differ), else by mlxcel's estimate (the same words when both
    give the same context)."""
    by_load, by_mlxcel = found.load_context, found.context
    if by_load is None or found.load is None:
        return by_mlxcel.words
    engine = found.load.engine.label
    if by_load.tokens == by_mlxcel.tokens:
        return by_mlxcel.words
    return f"{by_load.words} by the {engine} load; by mlxcel's estimate: {by_mlxcel.words}"


def _sizing(snapshot: ModelSnapshot, settings: EstimateSettings, workload: Workload) -> str:
    try:
        return sizing_line(mlxcel_sizing(snapshot, settings, workload.max_tokens, workload.batch))
    except Exception as exc:  # derived sizes must never hide the estimate itself
        return f"cannot tell ({type(exc).__name__}: {exc})"


def peak_estimate(
    peak: MeasuredPeak, snapshot: ModelSnapshot, state: ExplorerState, available: AvailableMemory
) -> int:
    """The estimate for a measured run: context P + G, the run's in-flight budget and KV
    cache, and the formula of the backend the run is held against (`estimate_backend`:
    ROCm's for a torch run that emulated its queue, the device's own for an MLX run on
    the CPU, Metal or CUDA), as the launcher and `vramscope measure` compare it
    (the `Answer` of the run's question: `core.answer.held_against`).
    """
    settings = replace(state.settings(available), inflight_mib=peak.inflight_mib)
    return held_against_answer(
        snapshot,
        settings,
        peak.estimate_backend,
        context_tokens=peak.context_tokens,
        kv_int8=peak.kv_cache_mode.int8,
    ).estimate.total_bytes


def estimate_for(
    state: ExplorerState, snapshot: ModelSnapshot | None, available: AvailableMemory | None
) -> Callable[[MeasuredPeak], int | None]:
    """`peak_estimate` for the model on screen; None while the model or memory is unknown."""

    def held_against(peak: MeasuredPeak) -> int | None:
        if snapshot is None or available is None:
            return None
        try:
            return peak_estimate(peak, snapshot, state, available)
        except Exception:  # an estimate that raises is already shown in the breakdown
            return None

    return held_against


def chart_points(
    records: Sequence[MeasuredPeak], names: Collection[str], state: ExplorerState
) -> tuple[Point, ...]:
    """Measured peaks comparable with the curve on screen, as (context P + G, bytes, engine).

    Runs of this model with the budget and KV dtype on screen (an mlx run may use
    mlx-lm's 8-bit cache); none when the curve is for a batch no run measures (runs
    are batch 1). The device is not matched: the engine applies ROCm's bound
    everywhere, so a CPU run is a point on the same curve.
    """
    if state.batch != 1:
        return ()
    kv_mode = KvCacheMode.of(state.kv_int8)
    return tuple(
        (p.context_tokens, p.peak_bytes, p.engine)
        for p in records
        if p.model in names and p.inflight_mib == state.inflight_mib and p.kv_cache_mode is kv_mode
    )


def inflight_hint(state: ExplorerState) -> tuple[str, str]:
    """The line under the in-flight slider, and its style class ("" hides it)."""
    if not state.backend.has_inflight_reserve:
        return f"inactive: {INFLIGHT_MIB.inactive_why}", "-inactive"
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


class LoadedFacts(Protocol):
    """What the loader has read (`tui.controllers.loader.Loader`)."""

    @property
    def entry(self) -> CatalogEntry | None:
        """The catalog entry of the model on screen."""

    @property
    def snapshot(self) -> ModelSnapshot | None:
        """The model as read."""

    @property
    def trained_context(self) -> int | None:
        """The model's trained context, if known."""

    @property
    def history(self) -> HistoryRead:
        """The measurement history as read."""

    @property
    def problem(self) -> str:
        """Why the model could not be read ("" when it could)."""


@dataclass(frozen=True)
class Summary:
    """The one line that always answers: which model, its total, whether it fits."""

    name: str
    detail: str
    """`8,192 tokens · total 5.43 GiB of 76.80 GiB`, or what is happening instead."""
    short: str = ""
    """The detail when space is short: `8K · 5.43 GiB of 76.80 GiB`."""
    fits: bool | None = None
    """None while there is no verdict (reading, an error)."""
    verdict: str = ""
    activity: str = ""
    """A measurement in flight, in a few words."""
    tiny: str = ""
    """The detail when even `short` would cut the model's own name: `8K · 5.43 GiB`."""


@dataclass(frozen=True)
class ScreenWords:
    """The words of one state around the estimate: commands, titles, the summary's parts."""

    name: str
    trained: int | None
    vramscope: str
    mlxcel: str
    chart_subtitle: str
    problem: str
    activity: str
    max_tokens: int
    analytical: bool
    points: tuple[Point, ...]
    """Measured peaks of the model on screen comparable with the curve."""
    panel: PanelView
    """What the measured panel shows."""

    def chart_title(self, est: MemoryEstimate | None) -> str:
        """`Total against context (log scale) · ▲ 8,192 tokens: 5.43 GiB`."""
        if est is None:
            return CHART_TITLE
        return (
            f"{CHART_TITLE} · ▲ {self.max_tokens:,} tokens: {format_bytes_short(est.total_bytes)}"
        )

    def summary(
        self,
        found: Answer | None,
        plan: Answer | None = None,
        view: EstimateView | None = None,
    ) -> Summary:
        """The summary line for one device's answer (None: reading or failed); with several
        devices, the plan's verdict and its fullest rank (`plan`: the split's answer),
        never the one-device figure; with `view` held against the calibrated verdict
        (`v`), vramscope's calibrated total and verdict. A context past the model's
        trained one says so."""
        name = self.name + (" (weights: analytical estimate)" if self.analytical else "")
        if found is None:
            return Summary(name, self.problem or "reading…", activity=self.activity)
        if plan is not None:
            if plan.split_problem is not None:
                return Summary(name, f"no split: {plan.split_problem}", activity=self.activity)
            return self._plan_summary(name, plan)
        est = found.estimate
        tokens, short_t, tiny_t = self._tokens(found)
        of = format_bytes_short(est.available_bytes)
        total = format_bytes_short(est.total_bytes)
        if view is not None and view.calibrated_basis and view.calibrated is not None:
            cal = view.calibrated
            cal_total = format_bytes_short(cal.total_bytes or 0)
            detail = f"{tokens} · vramscope calibrated {cal_total} of {of} (mlxcel's {total})"
            short = f"{short_t} · calibrated {cal_total} of {of}"
            label = f"{verdict_words(cal.verdict)} (calibrated)"
            tiny = f"{tiny_t} · calibrated {cal_total}"
            return Summary(name, detail, short, cal.fits, label, self.activity, tiny=tiny)
        v = found.verdict
        detail, short = f"{tokens} · total {total} of {of}", f"{short_t} · {total} of {of}"
        load = view.load if view is not None else None
        if load is not None and load.disagrees:
            # Both verdicts: mlxcel's badge, and the load's where it says otherwise.
            said = verdict_words(load.verdict)  # the words of inspect's load line, fit's VERDICT
            detail += f" · {load.heading} {format_bytes_short(load.load.device_bytes)} {said}"
            short += f" · {load.load.engine.label} {said}"
        return Summary(
            name, detail, short, v.fits, verdict_words(v), self.activity, tiny=f"{tiny_t} · {total}"
        )

    def _tokens(self, found: Answer) -> tuple[str, str, str]:
        """The context in three widths, flagged when past the trained context."""
        n = self.max_tokens
        trained = found.trained
        if found.past_trained and trained is not None:
            return (
                f"{n:,} tokens (past the trained {trained.tokens:,})",
                f"{short_tokens(n)} (> trained {short_tokens(trained.tokens)})",
                f"{short_tokens(n)}!",
            )
        return f"{n:,} tokens", short_tokens(n), short_tokens(n)

    def _plan_summary(self, name: str, plan: Answer) -> Summary:
        fullest = plan.fullest_rank
        assert fullest is not None
        assert plan.fits is not None
        peak, room = fullest.peak_bytes, fullest.estimate.available_bytes
        of = f"{format_bytes_short(peak)} of {format_bytes_short(room)}"
        split = plan.question.split
        head = f"{split.ranks}×{split.kind.value.upper()}"
        tokens, short_t, tiny_t = self._tokens(plan)
        detail = f"{head} · {tokens} · fullest rank {of}"
        short = f"{head} · {short_t} · {of}"
        tiny = f"{head} · {tiny_t} · {format_bytes_short(peak)}"
        label = verdict_words(plan.verdict)
        return Summary(name, detail, short, plan.fits, label, self.activity, tiny=tiny)


CHART_TITLE = "Total against context (log scale)"


def points_words(points: Sequence[Point], inflight_mib: int) -> str:
    """`◆ torch ● mlx · measured peaks at 1024 MiB: 3` ("" without points)."""
    if not points:
        return ""
    engines = sorted({engine for _, _, engine in points}, key=lambda e: e.value)
    marks = " ".join(f"{ENGINE_MARKS.get(e, MEASURED_MARK)} {e}" for e in engines)
    return f"{marks} · measured peaks at {inflight_mib} MiB: {len(points)}"


def screen_words(
    state: ExplorerState,
    loaded: LoadedFacts,
    available: AvailableMemory | None,
    measurements: Measurements,
    now: float,
) -> ScreenWords:
    """Everything the screen writes around the estimate for this state, and the measured
    points and panel for the model on screen."""
    entry, snapshot = loaded.entry, loaded.snapshot
    names = model_names(state, entry, snapshot.display if snapshot else None)
    points = chart_points(measurements.runs(loaded.history.results), names, state)
    panel = measurements.panel(names, estimate_for(state, snapshot, available), now)
    if panel.peak is not None:
        panel = replace(panel, differs=run_differences(panel.peak, state))
    arg = model_arg(entry) if entry is not None else state.model
    vramscope, second = (
        vramscope_command(state, available, arg),
        mlxcel_command(state, available, arg),
    )
    if state.devices > 1:  # the split: inspect --tp/--pp, and mlx.launch on the same plan
        per_device = vramscope_command(state, available, arg, memory_limit_text(state))
        vramscope, second = with_plan_flag(per_device, state), launch_command(state, arg)
    analytical = snapshot is not None and snapshot.weights.source is WeightsSource.ANALYTICAL_CONFIG
    return ScreenWords(
        name=entry.name if entry is not None else state.model,
        trained=loaded.trained_context,
        vramscope=vramscope,
        mlxcel=second,
        chart_subtitle=points_words(points, state.inflight_mib),
        problem=loaded.problem,
        activity=measurements.activity(now) or result_words(panel),
        points=points,
        panel=panel,
        max_tokens=state.max_tokens,
        analytical=analytical,
    )
