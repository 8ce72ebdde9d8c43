"""The control panel: every input of the estimate, and the engine `m` measures with.

Each row is built from its descriptor (`tui.model.control_specs`): a slider, a line of
choices, the Available picker or a box of sizes. The panel shows a state it is given
(`show`) and reports what the user changed as one `Changed` message carrying the new
`ExplorerState` and the edit that made it; it never writes the screen's state itself.
Each slider's exact-value box reads text through `tui.model.values`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from textual import events, on
from textual.app import ComposeResult
from textual.message import Message
from textual.widget import AwaitMount, Widget
from textual.widgets import Input, Static

from tui.model.control_specs import (
    BY_ID,
    CONTROLS,
    INFLIGHT_MIB,
    MAX_TOKENS,
    QUANTIZE,
    ControlSpec,
    WidgetKind,
    rows,
)
from tui.model.state import ExplorerState, shown_quantization
from tui.model.views import inflight_hint, tokens_hint
from tui.widgets.memory_field import MemoryField
from tui.widgets.repaint import KeptLabel, KeptLines, KeptRow, KeptStatic
from tui.widgets.segmented import Segmented
from tui.widgets.slider_field import BoxInput, SliderField

W = TypeVar("W", bound=Widget)

Edit = Callable[[ExplorerState], ExplorerState]
"""One change of the state, as a function: the old state in, the new one out."""


def _per_device_problem(state: ExplorerState) -> str:
    # With two devices or more only: core.parallel.plan comes with the first split.
    from tui.model.parallel_view import per_device_problem

    return per_device_problem(state)


class Controls(KeptLines):
    """Every control of `tui.model.control_specs.CONTROLS`, one row each, in its order."""

    DEFAULT_CSS = """
    Controls {
        height: auto;
        & > Horizontal { height: 1; }
        & .field-label { width: 16; }
        & #device-memory { width: 1fr; height: 1; }
        & #quantize-hint { width: 1fr; margin-left: 2; color: $text-muted; }
    }
    """

    class Changed(Message):
        """The user changed the state: `state` is the state on the controls with the change,
        `edit` the change itself, for a state that has moved on since (a key, the palette)."""

        def __init__(self, state: ExplorerState, edit: Edit) -> None:
            self.state = state
            self.edit = edit
            super().__init__()

    def __init__(self, state: ExplorerState, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.state = state
        self.border_title = "Controls"
        self._found: dict[str, Widget] = {}
        self._shown_state: ExplorerState | None = None
        """The state `show` last showed: a key changes one field, and setting the others
        again cost half a millisecond a key."""
        self._later: frozenset[str] = frozenset()
        """The controls of the rows hidden when the panel was made, not mounted until the
        state shows them (`show`): a third of the panel's widgets (llama.cpp's or mlxcel's,
        the split's). Mounted hidden once the first screen was out, they cost every start
        a layout of 43 widgets that most sessions never show (~100 ms of processor)."""
        self._pending: frozenset[str] = frozenset()
        """Rows being mounted: not `mounted` until their widgets are in."""
        self._mounting: list[AwaitMount] = []
        """The mounts of the rows in `_pending`, for `rows_in` to wait on."""

    def _get(self, widget_id: str, kind: type[W]) -> W:
        """A row or control by id, found once: `show` runs on every key, and a query
        walks every widget of the panel."""
        found = self._found.get(widget_id)
        if not isinstance(found, kind):
            found = self._found[widget_id] = self.query_one(f"#{widget_id}", kind)
        return found

    def compose(self) -> ComposeResult:
        later: set[str] = set()
        for row in rows(CONTROLS):
            first = row[0]
            if first.kind is not WidgetKind.MEMORY and not self._shown(first, self.state):
                later.update(spec.id for spec in row)
                continue
            yield self._row(row)
        self._later = frozenset(later)

    def _row(self, row: tuple[ControlSpec, ...]) -> Widget:
        """One row of the panel, showing the state (hidden where the state hides it)."""
        first = row[0]
        if first.kind is WidgetKind.SLIDER:
            slider = self._slider(first)
            slider.display = self._shown(first, self.state)
            return slider
        if first.kind is WidgetKind.MEMORY:
            return MemoryField(first.value(self.state), label=first.label, id=first.id)
        parts: list[Widget] = []
        for spec in row:
            if spec is first:
                parts.append(KeptLabel(spec.label, classes="field-label"))
            else:
                parts.append(KeptLabel("  "))
            parts.append(self._widget(spec))
            if spec.hint:  # a hint, not a label
                parts.append(KeptStatic("", id=f"{spec.id}-hint", markup=False))
        line = KeptRow(*parts, id=first.row_id)
        line.display = self._shown(first, self.state)
        return line

    def mounted(self, spec: ControlSpec) -> bool:
        """Whether the control is in the panel yet (see `_later`)."""
        return spec.id not in self._later and spec.id not in self._pending

    class RowsMounted(Message):
        """Rows the state came to show are in the panel (the screen gives them what the
        state does not hold: the GGUF's layer count)."""

    def _mount_shown(self) -> None:
        """Mount the rows left out that the state now shows, each in its place and as the
        state has them; the others stay out until it shows them."""
        if not self._later or not any(
            self._shown(BY_ID[spec_id], self.state) for spec_id in self._later
        ):
            return
        waits: list[AwaitMount] = []
        mounting: set[str] = set()
        before: Widget | None = None
        for row in rows(CONTROLS):
            first = row[0]
            if first.id not in self._later:
                if first.id not in self._pending:
                    before = self._row_widget(first)
                continue
            if not self._shown(first, self.state):
                continue
            widget = self._row(row)
            if before is None:
                waits.append(self.mount(widget, before=0))
            else:
                waits.append(self.mount(widget, after=before))
            before = widget
            mounting.update(spec.id for spec in row)
        self._later -= mounting
        self._pending |= mounting
        self._mounting.extend(waits)
        self.call_next(self._rows_in, waits, frozenset(mounting))

    async def _rows_in(self, waits: list[AwaitMount], ids: frozenset[str]) -> None:
        for wait in waits:
            await wait
        self._pending -= ids
        self._mounting = [wait for wait in self._mounting if wait not in waits]
        self.show(self.state, every=True)
        self.post_message(self.RowsMounted())

    async def rows_in(self) -> None:
        """Wait until every row being mounted is in (`show` mounts a row as the state
        first shows it); the screen waits on this before it lets the keys in."""
        for wait in list(self._mounting):
            await wait

    def _row_widget(self, first: ControlSpec) -> Widget:
        if first.kind is WidgetKind.SLIDER:
            return self.field(first.id)
        if first.kind is WidgetKind.MEMORY:
            return self._get(first.id, MemoryField)
        return self._get(first.row_id, KeptRow)

    def _slider(self, spec: ControlSpec) -> SliderField:
        assert spec.values is not None  # a slider reads its box through its ValueSpec
        return SliderField(
            spec.label,
            spec.stops,
            spec.value(self.state),
            spec=spec.values,
            page=spec.page,
            id=spec.id,
            tooltip=spec.tooltip or None,
        )

    def _widget(self, spec: ControlSpec) -> Widget:
        if spec.kind is WidgetKind.SIZES:
            return BoxInput(
                spec.value(self.state),
                placeholder=spec.placeholder,
                compact=True,
                id=spec.id,
                tooltip=spec.tooltip or None,
            )
        control = Segmented([c.label for c in spec.choices], spec.index(self.state), id=spec.id)
        if spec.tooltip:
            control.tooltip = spec.tooltip
        return control

    @staticmethod
    def _shown(spec: ControlSpec, state: ExplorerState) -> bool:
        # One device: a split's rows stay out of the way (`d` brings them: 2 devices); a
        # GGUF shows llama.cpp's controls in place of mlxcel's.
        return (not spec.split_only or state.devices > 1) and spec.applies(state)

    def show(self, state: ExplorerState, every: bool = False) -> None:
        """Show `state` in the controls whose value it changed since the last call, or in
        every one (no `Changed`; text being typed stays)."""
        before, self.state, self._shown_state = self._shown_state, state, state
        self._mount_shown()
        for spec in CONTROLS:
            if spec.id in self._later or spec.id in self._pending:
                continue  # made as the state is then; shown again once mounted
            if (
                not every
                and before is not None
                and spec.kind is not WidgetKind.SIZES  # its check reads other fields
                and spec.value(state) == spec.value(before)
                and self._shown(spec, state) == self._shown(spec, before)
            ):
                continue
            shown = self._shown(spec, state)
            if spec.kind is WidgetKind.SLIDER:
                self.field(spec.id).display = shown
            elif spec.kind is not WidgetKind.MEMORY:
                self._get(spec.row_id, Widget).display = shown
            if spec.kind is WidgetKind.SLIDER:
                self.field(spec.id).set_value(spec.value(state))
            elif spec.kind is WidgetKind.CHOICE:
                self._get(spec.id, Segmented).set_index(spec.index(state))
            elif spec.kind is WidgetKind.MEMORY:
                self._get(spec.id, MemoryField).set_choice(spec.value(state))
            elif spec.kind is WidgetKind.SIZES:
                self._show_sizes(spec, state)

    def _show_sizes(self, spec: ControlSpec, state: ExplorerState) -> None:
        box = self._get(spec.id, Input)
        text = spec.value(state)
        if not box.has_focus and box.value != text:
            with box.prevent(Input.Changed):
                box.value = text
        box.set_class(state.devices > 1 and bool(_per_device_problem(state)), "-invalid")

    def show_hints(self, state: ExplorerState, model_known: bool, trained: int | None) -> None:
        """The lines under the in-flight and token sliders."""
        if self.mounted(INFLIGHT_MIB):
            inflight = self.field(INFLIGHT_MIB.id)
            inflight.disabled = not INFLIGHT_MIB.active(state)
            inflight.set_hint(*inflight_hint(state))
        if self.mounted(MAX_TOKENS):
            self.field(MAX_TOKENS.id).set_hint(*tokens_hint(state, model_known, trained))

    def show_quantize(self, state: ExplorerState, what_ifs: dict[str, int | str]) -> None:
        """Offer "Quantize as" only where a what-if has a number (16/32-bit float weights)."""
        if not self.mounted(QUANTIZE):
            return
        offered = any(isinstance(v, int) for v in what_ifs.values())
        control = self._get(QUANTIZE.id, Segmented)
        control.disabled = not offered
        chosen = shown_quantization(state, what_ifs)
        control.set_index(QUANTIZE.index(replace(state, quantize_as=chosen)))
        reasons = {v for v in what_ifs.values() if isinstance(v, str)}
        if not what_ifs:
            hint = ""
        elif not offered:
            hint = "n/a: " + "; ".join(sorted(reasons))
        elif chosen.is_what_if:
            hint = "vramscope what-if"
        else:
            hint = ""
        line = self._get(f"{QUANTIZE.id}-hint", Static)
        if line.content != hint:  # an update lays out the whole screen again (~20 ms)
            line.update(hint)

    def field(self, field_id: str) -> SliderField:
        """A slider row by id (`tokens`, `inflight`, `batch`, `factor`)."""
        return self._get(field_id, SliderField)

    def focus_target(self, spec: ControlSpec) -> Widget | None:
        """Where a jump to `spec` puts focus: its slider, picker, box or choices (None while
        it is inactive or its row is hidden)."""
        if not self._shown(spec, self.state) or not self.mounted(spec):
            return None
        if spec.kind is WidgetKind.SLIDER:
            found = self.field(spec.id)
            return None if found.disabled else found.slider
        if spec.kind is WidgetKind.MEMORY:
            return self.query_one(f"#{spec.id} Select")
        return self.query_one(f"#{spec.id}")

    # The border lights up while focus is inside, as `:focus-within` would do, but as an
    # inline style: Textual restyles every widget under a `:focus-within` rule's node at
    # each focus change (50 here, 20-30 ms at start-up and at every Tab).
    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._light_border()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self._light_border()

    def on_resize(self, event: events.Resize) -> None:
        self._light_border()  # a layout without a border (narrow) must not get one

    def _light_border(self) -> None:
        focused = self.screen.focused
        lit = focused is not None and self in focused.ancestors
        edge, _ = self.styles.base.border_top  # the stylesheet's border, without ours
        if lit and edge not in ("", "none", "hidden"):
            self.styles.border = (edge, self.app.theme_variables.get("accent", "ansi_blue"))
        else:
            self.styles.border = None

    def _post(self, spec: ControlSpec, value: object) -> None:
        def edit(state: ExplorerState) -> ExplorerState:
            return spec.with_value(state, value)

        self.post_message(self.Changed(edit(self.state), edit))

    @on(SliderField.Changed)
    def _slid(self, event: SliderField.Changed) -> None:
        event.stop()
        spec = BY_ID[event.field.id or ""]
        self._post(spec, spec.cast(event.value))

    @on(Segmented.Changed)
    def _segment(self, event: Segmented.Changed) -> None:
        event.stop()
        spec = BY_ID[event.segmented.id or ""]
        self._post(spec, spec.choices[event.index % len(spec.choices)].value)

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        spec = BY_ID.get(event.input.id or "")
        if spec is None or spec.kind is not WidgetKind.SIZES:
            return  # a slider's or the memory field's own box: theirs to read
        event.stop()
        self._post(spec, event.value)

    @on(MemoryField.Changed)
    def _memory(self, event: MemoryField.Changed) -> None:
        event.stop()
        self._post(BY_ID[event.field.id or ""], event.choice)
