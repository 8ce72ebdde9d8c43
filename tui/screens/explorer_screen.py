"""The explorer: model list, controls, breakdown, chart and command lines on one screen.

One `reactive` state; the controls post `Controls.Changed` with the new state, and
`watch_state` shows it in the controls and recomputes (pure, microseconds: every change
repaints in the same frame). Reads are `tui.controllers.loader`'s, on thread workers,
and answer with `tui.messages`' typed messages, which this screen applies; `m` is
`tui.controllers.measure`'s.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.worker import Worker, WorkerState

from core.answer.answer import Answer, answer
from core.answer.device import Device, DevicePending, MachineReadings
from core.answer.question import ModelFacts
from core.backend import BackendChoice
from core.catalog.entry import Catalog, CatalogEntry
from core.display_text import clean_text
from core.errors import VramscopeError
from core.estimate.available import AvailableMemory
from core.estimate.estimate import MemoryEstimate
from core.measurement.engine import Engine
from core.measurement.result import MeasuredPeak
from core.units import format_bytes_short
from tui.controllers.first_reads import FirstReads
from tui.controllers.loader import Loader
from tui.controllers.measure import MeasureController
from tui.controllers.measure_run import MeasureEventMessage
from tui.deps import AppDeps
from tui.messages import (
    AvailableRead,
    CalibrationsRead,
    CatalogRead,
    DeviceRead,
    FailedModel,
    FitPick,
    GgufPick,
    HistoryLoaded,
    LoadedGguf,
    ModelRead,
    ModelReading,
    Recalibrated,
    WhatIfsRead,
    reading_text,
)
from tui.model.command_lines import fit_command
from tui.model.control_specs import LAYERS_ON_GPU, next_value
from tui.model.names import model_arg
from tui.model.presets import DEVICE_KEYS
from tui.model.scales import layer_stops, token_stops
from tui.model.state import (
    ExplorerState,
    MemoryChoice,
    explorer_device,
    shown_quantization,
    what_ifs_by_kind,
    with_memory,
)
from tui.model.views import ScreenWords, build_views, screen_words
from tui.out_of_memory import exit_out_of_memory, is_out_of_memory
from tui.screens.focus_keys import CYCLE_BINDINGS, FILTER, JUMP_BINDINGS, FocusKeys
from tui.widgets.key_footer import KeyFooter
from tui.widgets.repaint import KeptColumn, KeptRow, KeptScroll
from tui.widgets.status_line import StatusLine, SummaryLine

if TYPE_CHECKING:
    from tui.controllers.ranks import RanksController
    from tui.gguf.question import GgufAnswers
    from tui.widgets.breakdown import Breakdown
    from tui.widgets.command_lines_view import CommandLinesView
    from tui.widgets.context_chart import ContextChart
    from tui.widgets.controls import Controls
    from tui.widgets.measured_panel import MeasuredPanel
    from tui.widgets.memory_field import MemoryField
    from tui.widgets.model_list import ModelList

AFTER_FIRST_FRAME_CSS = Path(__file__).resolve().parent.parent / "after_first_frame.tcss"
"""The styles of the body and of the screens it opens (app.tcss holds the first frame's)."""
BODY_LIMIT_S = 1.0
"""The body is mounted after this many seconds should the first frame never be written
(`mount_body`)."""


@dataclass(frozen=True)
class _Body:
    """The body's widgets `recompute` and the reads show the state in, found once when
    the body is mounted (a query walks every widget on the screen: a few ms a key)."""

    models: ModelList
    controls: Controls
    memory: MemoryField
    commands: tuple[CommandLinesView, ...]
    measured: MeasuredPanel
    chart: ContextChart
    breakdown: Breakdown


class ExplorerScreen(FocusKeys):
    """The one main screen."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-medium"), (160, "-wide")]  # noqa: RUF012 (Textual types it so)
    AUTO_FOCUS = "#tokens StopSlider"
    """Focus starts on the token slider (set while mounting: no second restyle, no blur)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Quit and help first, so the footer shows them even 60 columns wide; the footer
        # shows the rest in this order while they fit (`KeyFooter`), help lists them all.
        Binding("q", "app.quit", "Quit"),
        Binding("question_mark", "app.help", "Help"),
        # The jumps are priority bindings, so a burst like `t4096` lands in the field.
        Binding("slash", f"jump('{FILTER}')", "Models", priority=True),
        *JUMP_BINDINGS,  # each control's (tui.model.control_specs), as the cycles below
        Binding("m", "measure", "Measure"),
        Binding("M", "measure_command", "Your command", show=False),
        *CYCLE_BINDINGS,
        Binding("H", "history", "History"),
        Binding("c", "copy('vramscope')", "Copy cmd"),
        Binding("C", "copy('mlxcel')", "Copy mlxcel", show=False),
        Binding("v", "cycle('calibrated_verdict')", "Verdict basis", show=False),
        Binding("R", "recalibrate", "Recalibrate", show=False),
        Binding("f", "fits", "Fits", show=False),
        Binding("escape", "escape", "Cancel / back to sliders", show=False),
        # From a text box, at once: keys sent with the Escape (`/llama` Esc `k`) are
        # already on their way to the focused widget when a plain binding would run.
        Binding("escape", "leave_box", show=False, priority=True),
        # Tab too: a plain binding runs only once the key has bubbled up from the focused
        # widget, and the next key of a burst (`a` Tab `32GB`) was already handed to the
        # widget focus was leaving, so its first character was lost.
        Binding("tab", "app.focus_next", show=False, priority=True),
        Binding("shift+tab", "app.focus_previous", show=False, priority=True),
    ]

    state: reactive[ExplorerState] = reactive(ExplorerState, init=False, repaint=False)
    """Everything the user chose; assigning it repaints what shows it (`watch_state`), not
    the whole screen (a reactive's own repaint redrew every line: ~40 ms a key)."""

    def __init__(
        self,
        deps: AppDeps,
        state: ExplorerState,
        machine: BackendChoice,
        measured: MeasuredPeak | None = None,
        models_dirs: tuple[Path, ...] = (),
        first_reads: FirstReads | None = None,
    ) -> None:
        super().__init__()
        self.set_reactive(ExplorerScreen.state, state)
        self.deps, self.machine = deps, machine
        self.loader = Loader(self, deps, machine.backend, first_reads)
        self.measure = MeasureController(self, deps, models_dirs, measured, self._measured)
        self.estimate: MemoryEstimate | None = None
        self.ranks: RanksController | None = None
        """The split's panel, from the first time Devices > 1 (core.parallel.plan with it)."""
        self.recalibrate_from: MeasuredPeak | None = None
        """The last new peak of `m`: `R` recalibrates its engine, backend and device."""
        self._facts: tuple[tuple[int, int, bool], ModelFacts] | None = None
        """The model's facts for `core.answer`, by (id of the snapshot, id of its what-ifs,
        whether its tensors are in): the split and the chart keep what they computed
        while only the settings move."""
        self.answer: Answer | None = None
        """The one-device answer on screen (None while reading, or on an error)."""
        self._body: _Body | None = None
        """The body's widgets, once mounted (`mount_body`): None for the first frame."""
        self._body_begun = False
        self.body_ready = asyncio.Event()
        """Set once the body is mounted and shows the state: the app holds keys until then."""
        self._detected_shown: AvailableMemory | None = None
        """The last detected available memory read, for the body's memory field."""
        self._shown_model = state.model
        """The name of the model on screen: a GGUF that cannot be read leaves it there."""

    def compose(self) -> ComposeResult:
        # Two steps: the top lines (the backend, the answer) and the footer first, so
        # the first frame is out in about the time a bare Textual app takes; the body
        # (model list, controls, breakdown, chart: 70 widgets and their code) right
        # after it (`mount_body`). The app holds keys until the body is in.
        self.add_layout_class()
        yield StatusLine(id="status")
        yield SummaryLine(id="summary")
        yield KeptRow(id="body")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._status = self.query_one(StatusLine)
        self._summary = self.query_one(SummaryLine)
        answered = self.loader.read_all(self.state.model, self.state.backend)
        for message in answered:  # read while Textual started: shown in the first frame
            if isinstance(message, ModelRead):
                self._take_model(message)
            else:
                self._take_available(message)
        self.recompute()  # the model and the memory: one answer, not one each
        self.set_timer(BODY_LIMIT_S, self.mount_body)

    async def mount_body(self) -> None:
        """Mount the body (once; the app calls it when the first frame is out), show the
        reads answered so far in it, then, once the body's own first frame is out, start
        the reads held for the first frame."""
        if self._body_begun:
            return
        self._body_begun = True
        self.loader.frame_written()
        from tui.widgets.breakdown import Breakdown
        from tui.widgets.command_lines_view import CommandLinesView
        from tui.widgets.context_chart import ContextChart
        from tui.widgets.controls import Controls
        from tui.widgets.measured_panel import MeasuredPanel
        from tui.widgets.memory_field import MemoryField
        from tui.widgets.model_list import ModelList
        from tui.widgets.ranks_panel import RanksPanel

        self.app.stylesheet.read(AFTER_FIRST_FRAME_CSS)  # parsed as the body is styled
        estimate = KeptColumn(
            Breakdown(id="breakdown"),
            RanksPanel(id="ranks"),
            MeasuredPanel(id="measured"),
            id="estimate",
        )
        estimate.border_title = "Estimate"
        main = KeptScroll(
            KeptRow(Controls(self.state, id="controls"), CommandLinesView(id="commands"), id="top"),
            estimate,
            ContextChart(id="chart"),
            CommandLinesView(id="commands-end"),  # narrow layouts: last, under the chart
            id="main",
        )
        models = ModelList(id="models")
        models.hub_enabled = self.deps.read_hub is not None
        await self.query_one("#body").mount(models, main)
        self._body = _Body(
            models,
            self.query_one(Controls),
            self.query_one(MemoryField),
            tuple(self.query(CommandLinesView)),
            self.query_one(MeasuredPanel),
            self.query_one(ContextChart),
            self.query_one(Breakdown),
        )
        self._show_reads(self._body)
        self.recompute()
        if self.focused is None and self.AUTO_FOCUS:
            self.set_focus(self.query_one(self.AUTO_FOCUS))
        # Once the body's first frame is out: the rows it hides, then the held reads (the
        # list, the history, ...); started with it, they took the interpreter from its
        # layout and paint.
        self.call_after_refresh(self._finish_body, self._body)

    async def _finish_body(self, body: _Body) -> None:
        """Wait for any control row being mounted (`Controls.rows_in`), start the held
        reads, and let the keys in."""
        await body.controls.rows_in()  # their stops: `on_controls_rows_mounted`
        self.recompute()
        self.loader.start_held_reads()
        self.body_ready.set()

    def _show_reads(self, body: _Body) -> None:
        """What the reads answered before the body was mounted, shown in it."""
        loader = self.loader
        if self._detected_shown is not None:
            body.memory.set_detected(self._detected_shown)
        if loader.failure is not None:
            body.breakdown.show_error(loader.failure.message)
        elif self._model_read():
            self._set_model_stops(body)
            body.models.set_current(self.state.model)
        else:
            body.breakdown.show_loading(reading_text(self.state.model))

    def on_unmount(self) -> None:
        self.measure.close()  # quitting kills a measurement still in flight

    @property
    def settled(self) -> bool:
        """True once the body is in and every read asked for so far has answered."""
        return self.body_ready.is_set() and self.loader.settled

    @property
    def readings(self) -> MachineReadings:
        """What the probes found, for the backend on screen."""
        loader = self.loader
        return MachineReadings(self.machine, loader.detected.get(self.state.backend), loader.device)

    @property
    def device(self) -> Device | None:
        """The device the screen answers for (the one resolution `inspect` uses), if known."""
        try:
            return explorer_device(self.state, self.readings)
        except DevicePending:
            return None

    @property
    def available(self) -> AvailableMemory | None:
        """The available memory the estimate is compared against, if known yet."""
        device = self.device
        return device.available if device is not None else None

    def update(self, **changes: Any) -> None:
        """Change some fields of the state (the palette's entry point)."""
        self.state = replace(self.state, **changes)

    def use_memory(self, choice: MemoryChoice) -> None:
        """Another source of available memory (the palette's): a preset brings its backend."""
        self.state = with_memory(self.state, choice)

    def on_controls_changed(self, message: Controls.Changed) -> None:
        # The change, not `message.state`: a key or a palette command may have changed
        # another field while the message was on its way, and that change must stay.
        message.stop()  # nothing above the screen reads it
        new = message.edit(self.state)
        if new == self.state and self._body is not None:
            self._body.controls.show(new, every=True)  # no watch_state: the move is unshown
        self.state = new

    def on_controls_rows_mounted(self, message: Controls.RowsMounted) -> None:
        message.stop()
        if self._body is not None and self._model_read():
            self._set_model_stops(self._body)  # the layers slider arrives with a GGUF

    def watch_state(self, old: ExplorerState, new: ExplorerState) -> None:
        if self._body is not None:
            self._body.controls.show(new)
        self.recompute()

    def recompute(self) -> None:
        """Answer the state's question and repaint everything that depends on it."""
        loader, state = self.loader, self.state
        loader.detect_for(state.backend)
        device = self.device
        available = device.available if device is not None else None
        words = screen_words(state, loader, available, self.measure.state, self.deps.clock())
        if loader.gguf is not None:
            self._recompute_gguf(loader.gguf, device, words)
            return
        facts = self.model_facts(tensors=state.devices > 1)
        quantize_as = shown_quantization(state, loader.what_ifs)
        if quantize_as.is_what_if:  # mlxcel has no what-if: `vramscope fit` gives the same row
            words = replace(
                words,
                vramscope=fit_command(state, available, quantize_as.word),
                mlxcel="# mlxcel estimates the model as stored: " + words.mlxcel,
                name=f"{words.name} as {quantize_as.word} (vramscope what-if)",
            )
        views, self.answer, self.estimate = None, None, None
        plan: Answer | str | None = None
        problem = ""  # what the breakdown says in place of an estimate
        if facts is not None and device is not None:
            one = replace(state, devices=1, quantize_as=quantize_as)
            try:
                found = answer(facts, one.question(device), loader.calibrations_read)
                assert isinstance(found, Answer)  # the what-if was checked above
                self.answer, self.estimate = found, found.estimate
                if self._body is not None:  # the first frame shows the summary alone
                    views = build_views(found, state.calibrated_verdict, words.points)
                if state.devices > 1:
                    plan = self.plan_answer(facts, device)
            except Exception as exc:  # a model no test foresaw: say so in place, keep running
                problem = f"cannot estimate this model: {type(exc).__name__}: {exc}"
        elif (
            loader.snapshot is not None
            and loader.device_problem
            and (state.memory.key in DEVICE_KEYS)
        ):
            problem = f"This device's memory: {loader.device_problem}; pick another Available"
        self._status.show_device(device, self.machine, self._device_wait())
        plan_answer = plan if isinstance(plan, Answer) else None
        summary = words.summary(self.answer, plan_answer, views.breakdown if views else None)
        if isinstance(plan, str):
            summary = replace(summary, detail=f"no split: {plan}", short="", tiny="", fits=None)
        self._summary.show(summary)
        body = self._body
        if body is None:
            return  # the first frame: the body shows all this once it is mounted
        controls = body.controls
        controls.show_hints(state, loader.snapshot is not None, words.trained)
        controls.show_quantize(state, loader.what_ifs)
        for view in body.commands:
            view.show(words.vramscope, words.mlxcel)
        body.measured.show(words.panel)
        chart, breakdown = body.chart, body.breakdown
        if views is not None:
            breakdown.show_estimate(views.breakdown)
        elif problem:
            breakdown.show_error(problem)
        elif loader.snapshot is not None:
            breakdown.show_loading("Detecting available memory…")
        if self.ranks is None and state.devices > 1:
            from tui.controllers.ranks import RanksController
            from tui.widgets.ranks_panel import RanksPanel

            self.ranks = RanksController(self.query_one(RanksPanel))
        if self.ranks is not None:
            self.ranks.show(plan if state.devices > 1 else None)
        chart.show(
            views.chart if views else None,
            words.chart_title(views.estimate if views else None),
            words.chart_subtitle,
        )

    def _recompute_gguf(
        self, answers: GgufAnswers, device: Device | None, words: ScreenWords
    ) -> None:
        """llama.cpp's load for the GGUF on screen: the answer to the state's question
        (kept per question: a key never reads the file again), its breakdown split
        between the device and the host, its summary, chart and command lines."""
        from tui.gguf.words import gguf_chart, gguf_summary, gguf_view

        self.answer, self.estimate = None, None
        state = self.state
        name = answers.model.shown_name
        found = answers.answer(state, device.available) if device is not None else None
        self._status.show_device(device, self.machine, self._device_wait())
        if found is None:
            summary = words.summary(None)
        else:
            summary = gguf_summary(name, found, state.max_tokens, words.activity)
        self._summary.show(summary)
        body = self._body
        if body is None:
            return
        trained = answers.model.trained_context
        body.controls.show_hints(state, True, trained)
        second = "# llama-server: " + (found if isinstance(found, str) else "…")
        if found is not None and not isinstance(found, str):
            second = found.command
        for view in body.commands:
            view.show(words.vramscope, second)
        body.measured.show(words.panel)
        chart, breakdown = body.chart, body.breakdown
        title = "llama.cpp's load against context (log scale)"
        if found is None:
            breakdown.show_loading("Detecting available memory…")
            chart.show(None, title)
        elif isinstance(found, str):
            breakdown.show_error(f"llama.cpp's load: {found}", heading="No llama.cpp load")
            chart.show(None, title)
        else:
            breakdown.show_gguf(gguf_view(found))
            held = format_bytes_short(found.held_bytes)
            title += f" · ▲ {found.load.tokens:,} tokens: {held}"
            chart.show(gguf_chart(found, trained), title)

    def _model_read(self) -> bool:
        """Whether the model on screen has been read (an MLX folder's or a GGUF's)."""
        return self.loader.snapshot is not None or self.loader.gguf is not None

    def _set_model_stops(self, body: _Body) -> None:
        """The token slider up to the model's trained context; the layers slider over the
        GGUF's layers."""
        loader = self.loader
        body.controls.field("tokens").set_stops(token_stops(loader.trained_context))
        if loader.gguf is not None and body.controls.mounted(LAYERS_ON_GPU):
            stops = layer_stops(loader.gguf.model.layer_count)
            body.controls.field("gpu-layers").set_stops(stops)

    def _device_wait(self) -> str:
        """Why there is no device yet ("" once there is)."""
        if self.state.memory.key in DEVICE_KEYS and self.loader.device_problem:
            return f"this device's memory: {self.loader.device_problem}"
        return "available memory: detecting…"

    def plan_answer(self, facts: ModelFacts, device: Device) -> Answer | str:
        """The split's answer, or why the Per device list does not read."""
        from tui.model.parallel_view import rank_limits

        try:
            limits = rank_limits(self.state)
        except VramscopeError as exc:
            return str(exc)
        shown = shown_quantization(self.state, self.loader.what_ifs)
        state = replace(self.state, quantize_as=shown)
        question = state.question(device, tuple(limits) if limits else None)
        found = answer(facts, question)
        assert isinstance(found, Answer)  # a split is always of the stored model
        return found

    def model_facts(self, tensors: bool = False) -> ModelFacts | None:
        """The model on screen for `core.answer` (with its tensor list when a split
        needs it), kept while the model, its what-ifs and the need stay the same."""
        loader = self.loader
        snapshot, what_ifs = loader.snapshot, loader.what_ifs
        if snapshot is None:
            return None
        key = (id(snapshot), id(what_ifs), tensors)
        if self._facts is None or self._facts[0] != key:
            listed = None
            if tensors:
                from tui.controllers.ranks import entry_tensors

                listed = entry_tensors(loader.entry, snapshot)
            facts = ModelFacts(
                snapshot,
                loader.entry.name if loader.entry is not None else self.state.model,
                what_ifs_by_kind(what_ifs),
                listed,
            )
            self._facts = (key, facts)
        return self._facts[1]

    # --- reads ---------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A read whose thread could not start never answers: end with the one line now
        (tui/out_of_memory.py), not after waiting for it (the screenshot waited 30 s)."""
        error = event.worker.error
        if event.state is WorkerState.ERROR and error is not None and is_out_of_memory(error):
            exit_out_of_memory(error)

    def on_what_ifs_read(self, message: WhatIfsRead) -> None:
        if self.loader.take_what_ifs(message):
            self.recompute()

    def on_model_read(self, message: ModelRead) -> None:
        if self._take_model(message):
            self.recompute()

    def _take_model(self, message: ModelRead) -> bool:
        """Keep a model read and show it in the body; False if a newer pick is coming."""
        loader = self.loader
        if not loader.take_model(message):
            return False
        body = self._body
        failure = ""
        result = message.result
        kept = loader.gguf_failure
        if kept is not None:  # a bad GGUF: the model on screen stays, the line says why
            self._status.show_alert(kept.message)
            self._tell(kept.message, title="Cannot read this GGUF", severity="error", timeout=8)
            if body is not None:
                body.models.set_current(self._shown_model)
            self.update(model=self._shown_model)
            return True
        self._status.show_alert("")
        if not isinstance(result, FailedModel):
            self._shown_model = self.state.model
        is_gguf = isinstance(result, LoadedGguf)
        if is_gguf != self.state.llama_cpp:
            self.set_class(is_gguf, "-gguf")  # its command lines' panel grows (tcss)
            self.state = replace(self.state, llama_cpp=is_gguf)
            self.refresh_bindings()  # the footer: llama.cpp's keys, or mlxcel's
        if isinstance(result, FailedModel):
            failure = result.message
            if result.gguf:
                self._status.show_alert(failure)
            if body is not None:
                body.breakdown.show_error(failure)
        elif body is not None:
            self._set_model_stops(body)
            body.models.set_current(self.state.model)
        if loader.answered_hub and body is not None:  # a Hub read is asked for in the body
            body.models.hub_done(loader.answered_hub, failure)
            if not failure:
                loader.read_catalog()  # the store has it now: the list shows it, marked hub
        return True

    def on_model_reading(self, message: ModelReading) -> None:
        if self.loader.still_reading(message) and self._body is not None:
            self._body.breakdown.show_loading(message.text)

    def on_catalog_read(self, message: CatalogRead) -> None:
        self.loader.take_catalog(message)
        if self._body is not None:  # it is: the catalog is read once the body is in
            self._body.models.show_catalog(
                self.loader.catalog, self.state.model, self.loader.gguf_entries
            )
        self.recompute()

    def on_available_read(self, message: AvailableRead) -> None:
        self._take_available(message)
        self.recompute()

    def _take_available(self, message: AvailableRead) -> None:
        self.loader.take_available(message)
        self._detected_shown = message.available
        if self._body is not None:
            self._body.memory.set_detected(message.available)

    def on_device_read(self, message: DeviceRead) -> None:
        self.loader.take_device(message)
        if self._body is not None:  # it is: the device is read once the body is in
            self._body.memory.set_device(message.device, message.problem)
        self.recompute()

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        from tui.screens.history_screen import HistoryScreen  # not needed for frame one

        loader = self.loader
        loader.take_history(message)
        for screen in self.app.screen_stack:
            if isinstance(screen, HistoryScreen):
                screen.show(loader.history, loader.history_path)
        self.recompute()

    def on_model_list_picked(self, message: ModelList.Picked) -> None:
        name = model_arg(message.entry)
        self._open_model(name, message.entry)
        self.update(model=name)

    def on_model_list_hub_requested(self, message: ModelList.HubRequested) -> None:
        name = message.repo_id
        body = self._shown_body
        body.models.hub_started(name)
        self.loader.read_model(name, None, hub=True)  # a worker thread: keys keep working
        body.breakdown.show_loading(f"Reading {name} from the Hub…")
        self.update(model=name)

    def _open_model(self, name: str, entry: CatalogEntry) -> None:
        """Read another model (picked in the list or in Fits)."""
        body = self._shown_body
        body.models.set_current(name)
        self.loader.read_model(name, entry)
        body.breakdown.show_loading(reading_text(name))

    def _open_gguf(self, name: str) -> None:
        """Read a GGUF picked in Fits (its file: no catalog entry)."""
        body = self._shown_body
        body.models.set_current(name)
        self.loader.read_model(name, None)
        body.breakdown.show_loading(reading_text(name))

    @property
    def _shown_body(self) -> _Body:
        """The body, for what only the body can ask for (a pick in its list, a key the app
        held until it was in)."""
        assert self._body is not None, "the body is mounted before any key or pick"
        return self._body

    # --- measuring (m, H) ----------------------------------------------------------

    def action_measure(self) -> None:
        """Measure the model on screen; while a run is in flight, cancel it. With
        "your command" chosen to measure with, ask for it (as `M`)."""
        external = self.state.engine is Engine.EXTERNAL or self.state.llama_cpp
        if external and not self.measure.running:  # a GGUF: your llama.cpp command
            self.action_measure_command()
            return
        self.measure.toggle(self.state, self.loader.entry, self.loader.snapshot)

    def action_measure_command(self) -> None:
        """`M`: run your own command and hold its peak against the model on screen."""
        from tui.model.measure_plan import command_model, measure_target
        from tui.model.views import estimate_for
        from tui.screens.command_screen import CommandScreen, suggested_command

        state, snapshot = self.state, self.loader.snapshot
        held = estimate_for(state, snapshot, self.available)
        model = measure_target(self.loader.entry, state.model)

        def finish(peak: MeasuredPeak) -> MeasuredPeak:
            return replace(peak, estimate_bytes=held(peak))

        def closed(peak: MeasuredPeak | None) -> None:
            if peak is not None:
                self.measure.show(peak)
                self.loader.read_history()

        named, why = command_model(self.loader.entry, state.model)
        suggested = suggested_command(named, state.max_tokens)
        gguf = self.loader.gguf
        found = gguf.answer(state, self.available) if gguf and self.available else None
        if found is not None and not isinstance(found, str):
            # A GGUF: llama.cpp's own command for the question on screen, one token long
            # (llama-server would run until stopped), its buffer lines held beside the load.
            words = ["llama-completion", *shlex.split(found.command)[1:]]
            suggested = shlex.join([*words, "-n", "1", "-p", "hi", "-no-cnv"])
            why = ""
        screen = CommandScreen(
            suggested,
            model,
            state.max_tokens,
            state.kv_int8,
            finish,
            note=why,
        )
        self.app.push_screen(screen, closed)

    def on_measure_event_message(self, message: MeasureEventMessage) -> None:
        self.measure.take(message)

    def _measured(self, new_peak: bool) -> None:
        if new_peak:
            self.loader.read_history()  # the launcher has appended the result
            peak = self.measure.state.measured
            if peak is not None:
                self.recalibrate_from = peak
                self._tell(
                    f"R: recalibrate {peak.engine.value} on {peak.device_kind.value} from the "
                    "measurement history, this run included (as vramscope calibrate)",
                    title="Measured",
                    timeout=10,
                )
        self.recompute()

    def action_recalibrate(self) -> None:
        """Fit vramscope's calibration again from the history, the last run included."""
        peak = self.recalibrate_from
        if peak is None:
            self._tell("measure a run first (m); R then recalibrates from the history")
            return
        self._tell("recalibrating from the measurement history…", timeout=3)
        self.loader.recalibrate(peak)

    def on_recalibrated(self, message: Recalibrated) -> None:
        from core.calibration.report import refused_line, runs

        self.loader.take_recalibrated()
        outcome = message.outcome
        if isinstance(outcome, str):
            self._tell(outcome, title="Not recalibrated", severity="error", timeout=10)
            return
        for warning in outcome.warnings:
            self._tell(warning, severity="warning", timeout=10)
        for result in outcome.results:
            cal = result.calibration
            if cal is None:
                self._tell(refused_line(result), title="Not recalibrated", severity="error")
            else:
                who = cal.key.words
                self._tell(
                    f"{who}: {runs(cal.runs)} of {len(cal.models)} models, fixed part "
                    f"{cal.fixed_bytes:,} bytes",
                    title="Recalibrated (vramscope)",
                    timeout=10,
                )
        self.loader.read_calibrations()

    def on_calibrations_read(self, message: CalibrationsRead) -> None:
        self.loader.take_calibrations(message)
        for warning in message.warnings:
            self._tell(warning, severity="warning", timeout=10)
        self.recompute()

    def _tell(self, message: str, **kw: Any) -> None:
        """A notification of words that may hold a model's or a device's name: cleaned,
        and never read as Textual markup (a `[` in a name stays text)."""
        self.notify(clean_text(message), markup=False, **kw)

    def action_history(self) -> None:
        """Show the past runs (re-read from the file in the background)."""
        from tui.screens.history_screen import HistoryScreen

        if not isinstance(self.app.screen, HistoryScreen):
            self.app.push_screen(HistoryScreen(self.loader.history, self.loader.history_path))
            self.loader.read_history()

    # --- what fits (f) -------------------------------------------------------------

    def action_fits(self) -> None:
        """Show every catalog model's rows for the settings on screen (`vramscope fit`)."""
        from tui.screens.fits_screen import FitsInputs, FitsScreen  # not for frame one

        if isinstance(self.app.screen, FitsScreen):
            return
        device = self.device
        if device is None:
            self.notify("Available memory is still being detected.", severity="warning")
            return
        state = self.state
        catalog = self.loader.catalog if isinstance(self.loader.catalog, Catalog) else None
        question = replace(state, devices=1).question(device)
        from tui.gguf.question import gguf_ask

        ask = gguf_ask(state, device.available)
        inputs = FitsInputs(question, fit_command(state, device.available), ask)
        self.app.push_screen(FitsScreen(self.deps, inputs, catalog), self.open_fit)

    def open_fit(self, pick: FitPick | GgufPick | None) -> None:
        """Open a Fits row: its model, and its quantization in "Quantize as"; a GGUF row
        its file, with the most `--n-gpu-layers` that fits when all do not."""
        if isinstance(pick, GgufPick):
            name = pick.row.file
            if name != self.state.model:
                self._open_gguf(name)
            layers = pick.gpu_layers
            self.update(model=name, **({"gpu_layers": layers} if layers is not None else {}))
            return
        if pick is None:
            return
        name = model_arg(pick.entry)
        if name != self.state.model:
            self._open_model(name, pick.entry)
        self.update(model=name, quantize_as=pick.row.quantization)

    def action_cycle(self, name: str) -> None:
        """`k` fp16 <-> int8, `n` the next backend, `d` 1 -> 2 -> ... -> 8 -> 1 devices,
        `s` TP <-> PP, `w` the next measuring engine."""
        self.update(**{name: next_value(self.state, name)})

    def action_copy(self, which: str) -> None:
        """Copy a command line to the clipboard (OSC 52)."""
        view = self._shown_body.commands[0]  # both views show the same lines
        text = view.vramscope if which == "vramscope" else view.mlxcel
        self.app.copy_to_clipboard(text)
        self.notify(text, title="Copied to the clipboard", timeout=4)
