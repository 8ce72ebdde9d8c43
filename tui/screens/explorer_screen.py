"""The explorer: model list, controls, breakdown, chart and command lines on one screen.

Reading happens in background threads (catalog, model, available memory); the
estimate over an already-read snapshot is pure and takes microseconds, so every
control change recomputes it synchronously and repaints in the same frame.
A read's answer is dropped when a newer request has been made since; quitting
never waits for a read that hangs.

`m` measures the model on screen in a child process (`tui.measure_run`); its
progress, result or failure shows under the breakdown, its peak joins the
chart's measured points, and quitting kills a run still in flight.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input

from core.available import AvailableMemory
from core.backend import Backend, BackendChoice
from core.catalog import Catalog, CatalogEntry
from core.errors import VramscopeError
from core.estimate import MemoryEstimate
from core.history import HistoryRead
from core.measurement import FailureKind, MeasuredPeak, MeasurementFailure
from core.model import ModelSnapshot
from core.units import format_bytes_short
from tui.command_lines import mlxcel_command, vramscope_command
from tui.deps import AppDeps
from tui.measure_plan import measure_request, model_names
from tui.measure_run import MeasureEventMessage, MeasureRun
from tui.measure_state import Measurements
from tui.scales import token_stops
from tui.screens.history_screen import HistoryScreen
from tui.state import (
    ExplorerState,
    MemoryChoice,
    available_status,
    backend_status,
    backend_status_short,
)
from tui.views import build_views, chart_points, inflight_hint, peak_estimate, tokens_hint
from tui.widgets.breakdown import Breakdown
from tui.widgets.command_lines_view import CommandLinesView
from tui.widgets.context_chart import ContextChart
from tui.widgets.controls import BACKENDS, Controls
from tui.widgets.measured_panel import MeasuredPanel
from tui.widgets.memory_field import MemoryField
from tui.widgets.model_list import ModelList, model_arg
from tui.widgets.segmented import Segmented
from tui.widgets.slider_field import SliderField
from tui.widgets.status_line import StatusLine

CHART_TITLE = "Total against context (log scale)"
T = TypeVar("T")


@dataclass(frozen=True)
class LoadedModel:
    """A model read by a worker."""

    entry: CatalogEntry
    snapshot: ModelSnapshot
    seconds: float


@dataclass(frozen=True)
class FailedModel:
    """A model that could not be read, and why, in one line."""

    name: str
    message: str


class ExplorerScreen(Screen[None]):
    """The one main screen."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-medium"), (160, "-wide")]  # noqa: RUF012 (Textual types it so)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "Models"),
        Binding("t", "focus_field('tokens')", "Tokens", show=False),
        Binding("i", "focus_field('inflight')", "In-flight", show=False),
        Binding("b", "focus_field('batch')", "Batch", show=False),
        Binding("h", "focus_field('factor')", "Headroom", show=False),
        Binding("a", "focus_memory", "Available", show=False),
        Binding("k", "toggle_kv", "KV dtype"),
        Binding("n", "next_backend", "Backend"),
        Binding("c", "copy('vramscope')", "Copy cmd"),
        Binding("C", "copy('mlxcel')", "Copy mlxcel", show=False),
        Binding("m", "measure", "Measure"),
        Binding("H", "history", "History", show=False),
        Binding("escape", "escape", "Cancel / back to sliders", show=False),
    ]

    def __init__(
        self,
        deps: AppDeps,
        state: ExplorerState,
        start: BackendChoice,
        machine: BackendChoice,
        measured: MeasuredPeak | None = None,
        models_dirs: Sequence[Path] = (),
    ) -> None:
        super().__init__()
        self.deps = deps
        self.state = state
        self.start = start
        self.machine = machine
        self.models_dirs = tuple(models_dirs)
        self.measurements = Measurements(measured)
        """The run in flight (key `m`), the last failure and the last peak."""
        self.history = HistoryRead()
        self.history_path: Path | None = None
        self._run_timer: Timer | None = None
        self.entry: CatalogEntry | None = None
        self.snapshot: ModelSnapshot | None = None
        self.detected: AvailableMemory | None = None
        self.estimate: MemoryEstimate | None = None
        self._model_request = 0
        self._loading_since = 0.0
        self._loading_timer: Timer | None = None
        self._waiting = {"catalog", "available", "model", "history"}

    # --- layout ----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="body"):
            model_list = ModelList(id="models")
            model_list.border_title = "Models"
            yield model_list
            with VerticalScroll(id="main"):
                with Horizontal(id="top"):
                    controls = Controls(self.state, id="controls")
                    controls.border_title = "Controls"
                    yield controls
                    commands = CommandLinesView(id="commands")
                    commands.border_title = "Same estimate on the command line (c, C copy)"
                    yield commands
                with Vertical(id="estimate"):
                    yield Breakdown(id="breakdown")
                    yield MeasuredPanel(id="measured")
                chart = ContextChart(id="chart")
                chart.border_title = CHART_TITLE
                yield chart
                # Narrow layouts show the command lines last, under the chart.
                end = CommandLinesView(id="commands-end")
                end.border_title = commands.border_title
                yield end
        yield Footer()

    def on_resize(self) -> None:
        # Under 120 columns the footer drops its spacing so `? Help` stays in view.
        self.query_one(Footer).compact = self.size.width < 120

    def on_mount(self) -> None:
        self.query_one("#estimate", Vertical).border_title = "Estimate"
        self.query_one("#tokens", SliderField).slider.focus()
        self._show_status()
        self._show_control_hints()
        self.read_catalog()
        self.detect_available()
        self.read_history()
        self._request_model(self.state.model, None)

    def on_unmount(self) -> None:
        # Quitting (or any end of this screen) kills a measurement still in flight.
        run = self.measurements.run
        if run is not None:
            self.measurements.run = None
            run.close()

    @property
    def settled(self) -> bool:
        """True once the catalog, available memory, history and the latest model pick have
        answered."""
        return not self._waiting

    # --- background reads: nothing below reads a file on the UI thread ---------------

    def _in_background(self, name: str, read: Callable[[], T], done: Callable[[T], None]) -> None:
        """Run `read` in a daemon thread and hand its result to `done` on the UI thread.

        Daemon threads rather than Textual's thread workers: a worker runs in the
        event loop's executor, which the interpreter joins at exit, so quitting
        during a read that hangs (a stalled network mount) would hang too.
        `read` must not raise; each caller turns failures into a result.
        """
        app = self.app

        def run() -> None:
            result = read()
            with contextlib.suppress(Exception):  # the app quit meanwhile: nobody to tell
                app.call_from_thread(done, result)

        threading.Thread(target=run, name=f"vramscope-{name}", daemon=True).start()

    def read_catalog(self) -> None:
        """Build the catalog in the background."""
        self._in_background("catalog", self._build_catalog, self._catalog_read)

    def _build_catalog(self) -> Catalog | str:
        try:
            return self.deps.build_catalog()
        except Exception as exc:  # a broken catalog must never take the app down
            return f"cannot list models: {type(exc).__name__}: {exc}"

    def _catalog_read(self, catalog: Catalog | str) -> None:
        self._waiting.discard("catalog")
        models = self.query_one(ModelList)
        if isinstance(catalog, str):
            models.set_error(catalog)
            return
        models.set_entries(catalog.entries, len(catalog.skipped))
        models.set_current(self.state.model)

    def detect_available(self) -> None:
        """Probe this machine's available memory in the background."""
        self._in_background("available", self._probe_available, self._available_detected)

    def _probe_available(self) -> AvailableMemory:
        try:
            return self.deps.detect_available(self.machine.backend)
        except Exception as exc:  # a probe that breaks means "nothing detected"
            return AvailableMemory(0, f"detection failed: {type(exc).__name__}")

    def _available_detected(self, found: AvailableMemory) -> None:
        self._waiting.discard("available")
        self.detected = found
        self.query_one(MemoryField).set_detected(found)
        self.recompute()

    def read_history(self) -> None:
        """Read the measurement history in the background (chart points, history screen)."""
        self._waiting.add("history")
        self._in_background("history", self._read_history, self._history_read)

    def _read_history(self) -> tuple[Path | None, HistoryRead]:
        try:
            store = self.deps.history()
            return (store.path, store.read()) if store is not None else (None, HistoryRead())
        except Exception as exc:  # the reader skips damaged lines; this is anything else
            return None, HistoryRead(warnings=[f"cannot read the history: {exc}"])

    def _history_read(self, result: tuple[Path | None, HistoryRead]) -> None:
        self._waiting.discard("history")
        self.history_path, self.history = result
        for screen in self.app.screen_stack:
            if isinstance(screen, HistoryScreen):
                screen.show(self.history, self.history_path)
        self.recompute()

    def _request_model(self, name: str, entry: CatalogEntry | None) -> None:
        self._model_request += 1
        self._waiting.add("model")
        self._loading_since = self.deps.clock()
        self.query_one(Breakdown).show_loading(f"Reading {name}…")
        if self._loading_timer is None:
            self._loading_timer = self.set_interval(0.5, self._tick_loading)
        request = self._model_request
        self._in_background(
            "model",
            lambda: self._read_model(name, entry),
            lambda result: self._model_read(request, result),
        )

    def _tick_loading(self) -> None:
        seconds = self.deps.clock() - self._loading_since
        self.query_one(Breakdown).show_loading(f"Reading {self.state.model}… {seconds:.1f} s")

    def _stop_loading_timer(self) -> None:
        if self._loading_timer is not None:
            self._loading_timer.stop()
            self._loading_timer = None

    def _read_model(self, name: str, entry: CatalogEntry | None) -> LoadedModel | FailedModel:
        """Resolve and read a model (background thread); any failure becomes a message."""
        started = self.deps.clock()
        try:
            found = entry if entry is not None else self.deps.resolve_entry(name)
            snapshot = self.deps.load_snapshot(found)
            return LoadedModel(found, snapshot, self.deps.clock() - started)
        except VramscopeError as exc:
            return FailedModel(name, str(exc))
        except Exception as exc:  # never let a bad model crash the app
            return FailedModel(name, f"{name}: unexpected {type(exc).__name__}: {exc}")

    def _model_read(self, request: int, result: LoadedModel | FailedModel) -> None:
        if request != self._model_request:
            return  # a newer pick is on its way
        self._waiting.discard("model")
        self._stop_loading_timer()
        if isinstance(result, FailedModel):
            self.entry, self.snapshot = None, None
            self.query_one(Breakdown).show_error(result.message)
            self._show_outputs_cleared()
            return
        self.entry, self.snapshot = result.entry, result.snapshot
        trained = result.snapshot.max_position_embeddings or result.entry.max_position_embeddings
        self.query_one("#tokens", SliderField).set_stops(token_stops(trained))
        self.query_one(ModelList).set_current(self.state.model)
        self.recompute()

    # --- the estimate: pure, synchronous, on every change ----------------------------

    @property
    def available(self) -> AvailableMemory | None:
        """The available memory the estimate is compared against, if known yet."""
        return self.state.memory.resolve(self.detected)

    @property
    def trained_context(self) -> int | None:
        """The model's `max_position_embeddings` (or the catalog's family default)."""
        if self.snapshot is None:
            return None
        if self.snapshot.max_position_embeddings is not None:
            return self.snapshot.max_position_embeddings
        return self.entry.max_position_embeddings if self.entry else None

    def recompute(self) -> None:
        """Estimate, solve and repaint everything that depends on the state."""
        self._show_status()
        self._show_control_hints()
        self._show_commands()
        self._show_measured()
        snapshot, available = self.snapshot, self.available
        if snapshot is None:
            return
        breakdown = self.query_one(Breakdown)
        if available is None:
            breakdown.show_loading("Detecting available memory…")
            return
        try:
            runs = self.measurements.runs(self.history.results)
            points = chart_points(runs, self._model_names(), self.state)
            views = build_views(snapshot, self.state, available, self.trained_context, points)
        except Exception as exc:  # a model no test foresaw: say so in place, keep running
            breakdown.show_error(f"cannot estimate this model: {type(exc).__name__}: {exc}")
            self._show_outputs_cleared()
            return
        self.estimate = views.estimate
        breakdown.show_estimate(views.breakdown)
        chart = self.query_one(ContextChart)
        chart.border_title = (
            f"{CHART_TITLE} · ▲ {self.state.max_tokens:,} tokens: "
            f"{format_bytes_short(views.estimate.total_bytes)}"
        )
        chart.border_subtitle = (
            f"◆ measured peaks at {self.state.inflight_mib} MiB: {len(points)}" if points else ""
        )
        chart.show(views.chart)

    def show_measured(self, peak: MeasuredPeak | None) -> None:
        """Show a measured peak beside the estimate (None hides it); a run's result comes here."""
        self.measurements.measured = peak
        self.recompute()

    @property
    def run(self) -> MeasureRun | None:
        """The measurement in flight, if any."""
        return self.measurements.run

    def _model_names(self) -> set[str]:
        display = self.snapshot.display if self.snapshot is not None else None
        return model_names(self.state, self.entry, display)

    def _estimate_for(self, peak: MeasuredPeak) -> int | None:
        """The estimate a peak is held against (None while the model or memory is unknown)."""
        snapshot, available = self.snapshot, self.available
        if snapshot is None or available is None:
            return None
        try:
            return peak_estimate(peak, snapshot, self.state, available)
        except Exception:  # an estimate that raises is already shown in the breakdown
            return None

    def _show_measured(self) -> None:
        self.measurements.paint(
            self.query_one(MeasuredPanel),
            self._model_names(),
            self._estimate_for,
            self.deps.clock(),
        )

    def _show_outputs_cleared(self) -> None:
        self.estimate = None
        chart = self.query_one(ContextChart)
        chart.border_title = CHART_TITLE
        chart.border_subtitle = ""
        chart.show(None)
        self._show_measured()

    def _show_status(self) -> None:
        self.query_one(StatusLine).show(
            backend_status(self.state.backend, self.start, self.machine),
            backend_status_short(self.state.backend, self.start),
            available_status(self.available),
        )

    def _show_commands(self) -> None:
        arg = model_arg(self.entry) if self.entry is not None else self.state.model
        vramscope = vramscope_command(self.state, self.available, arg)
        mlxcel = mlxcel_command(self.state, self.available, arg)
        for view in self.query(CommandLinesView):
            view.show(vramscope, mlxcel)

    def _show_control_hints(self) -> None:
        inflight = self.query_one("#inflight", SliderField)
        inflight.disabled = not self.state.backend.has_inflight_reserve
        inflight.set_hint(*inflight_hint(self.state))
        known = self.snapshot is not None
        self.query_one("#tokens", SliderField).set_hint(
            *tokens_hint(self.state, known, self.trained_context)
        )

    # --- changes from the controls ---------------------------------------------------

    def update_state(self, **changes: object) -> None:
        """Apply a change to the state, reflect it in the controls, and recompute."""
        self.state = replace(self.state, **changes)  # type: ignore[arg-type]
        self._sync_controls()
        self.recompute()

    def _sync_controls(self) -> None:
        s = self.state
        self.query_one("#tokens", SliderField).set_value(s.max_tokens)
        self.query_one("#inflight", SliderField).set_value(s.inflight_mib)
        self.query_one("#batch", SliderField).set_value(s.batch)
        self.query_one("#factor", SliderField).set_value(s.headroom_factor)
        self.query_one("#kv", Segmented).set_index(1 if s.kv_int8 else 0)
        self.query_one("#backend", Segmented).set_index(BACKENDS.index(s.backend))
        self.query_one(MemoryField).set_choice(s.memory)

    @on(SliderField.Changed, "#tokens")
    def _tokens(self, event: SliderField.Changed) -> None:
        self.update_state(max_tokens=int(event.value))

    @on(SliderField.Changed, "#inflight")
    def _inflight(self, event: SliderField.Changed) -> None:
        self.update_state(inflight_mib=int(event.value))

    @on(SliderField.Changed, "#batch")
    def _batch(self, event: SliderField.Changed) -> None:
        self.update_state(batch=int(event.value))

    @on(SliderField.Changed, "#factor")
    def _factor(self, event: SliderField.Changed) -> None:
        self.update_state(headroom_factor=float(event.value))

    @on(Segmented.Changed, "#kv")
    def _kv(self, event: Segmented.Changed) -> None:
        self.update_state(kv_int8=event.index == 1)

    @on(Segmented.Changed, "#backend")
    def _backend(self, event: Segmented.Changed) -> None:
        self.update_state(backend=BACKENDS[event.index])

    @on(MemoryField.Changed)
    def _memory(self, event: MemoryField.Changed) -> None:
        self.update_state(memory=event.choice)

    @on(ModelList.Picked)
    def _picked(self, event: ModelList.Picked) -> None:
        name = model_arg(event.entry)
        self.state = replace(self.state, model=name)
        self.query_one(ModelList).set_current(name)
        self._show_commands()
        self._request_model(name, event.entry)

    # --- measuring (key m) -------------------------------------------------------------

    def action_measure(self) -> None:
        """Measure the model on screen; while a run is in flight, cancel it."""
        if self.run is not None:
            self.cancel_measurement()
            return
        try:
            request = measure_request(self.state, self.entry, self.models_dirs)
        except ValueError as exc:  # a request the launcher would refuse: say so in place
            failure = MeasurementFailure(FailureKind.INTERNAL, f"cannot measure: {exc}")
            self.measurements.fail(self.state.model, failure)
            self._show_measured()
            return
        run = MeasureRun(request, self.deps.start_measurement, self)
        self.measurements.begin(run, self.deps.clock())
        run.begin()
        self._run_timer = self.set_interval(0.5, self._show_measured)  # the seconds so far
        self._show_measured()

    def cancel_measurement(self) -> None:
        """Kill the run in flight (if any) and say so in place."""
        self.measurements.cancel()
        self._stop_run_timer()
        self._show_measured()

    def _stop_run_timer(self) -> None:
        if self._run_timer is not None:
            self._run_timer.stop()
            self._run_timer = None

    def on_measure_event_message(self, message: MeasureEventMessage) -> None:
        if not self.measurements.apply(message.run_id, message.event):
            self._show_measured()
            return
        self._stop_run_timer()
        if self.measurements.failure is None:
            self.read_history()  # the launcher has appended the result
        self.recompute()

    def action_history(self) -> None:
        """Show the past runs (re-read from the file in the background)."""
        if not isinstance(self.app.screen, HistoryScreen):
            self.app.push_screen(HistoryScreen(self.history, self.history_path))
            self.read_history()

    def action_escape(self) -> None:
        """Cancel a run in flight; otherwise (or from a text box) back to the token slider."""
        if self.run is not None and not isinstance(self.app.focused, Input):
            self.cancel_measurement()
        else:
            self.action_focus_field("tokens")

    # --- actions (keys and the command palette) --------------------------------------

    def set_backend(self, backend: Backend) -> None:
        """Switch the backend."""
        self.update_state(backend=backend)

    def set_kv_int8(self, int8: bool) -> None:
        """Switch the KV dtype."""
        self.update_state(kv_int8=int8)

    def set_inflight(self, mib: int) -> None:
        """Set the in-flight budget."""
        self.update_state(inflight_mib=mib)

    def set_memory(self, choice: MemoryChoice) -> None:
        """Set where available memory comes from."""
        self.update_state(memory=choice)

    def action_toggle_kv(self) -> None:
        """fp16 <-> int8."""
        self.set_kv_int8(not self.state.kv_int8)

    def action_next_backend(self) -> None:
        """ROCm -> CUDA -> Metal -> CPU -> ROCm."""
        i = BACKENDS.index(self.state.backend)
        self.set_backend(BACKENDS[(i + 1) % len(BACKENDS)])

    def action_focus_filter(self) -> None:
        """Jump to the model filter."""
        self.query_one(ModelList).filter_box.focus()

    def action_focus_field(self, field_id: str) -> None:
        """Jump to a slider (disabled ones cannot take focus)."""
        field = self.query_one(f"#{field_id}", SliderField)
        if not field.disabled:
            field.slider.focus()

    def action_focus_memory(self) -> None:
        """Jump to the available-memory picker."""
        self.query_one("#memory Select").focus()

    def action_copy(self, which: str) -> None:
        """Copy a command line to the clipboard (OSC 52)."""
        view = self.query_one("#commands", CommandLinesView)
        text = view.vramscope if which == "vramscope" else view.mlxcel
        self.app.copy_to_clipboard(text)
        self.notify(text, title="Copied to the clipboard", timeout=4)
