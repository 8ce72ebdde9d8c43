"""One control row: a label, a stop slider and a box for typing an exact value.

The slider moves between stops; the box takes any value the field's `ValueSpec`
reads (a context of 5000 tokens, `1.5k`, an in-flight budget of `1G`), and the
knob then sits between stops. Typed text is applied only while it reads as a
value (a live preview); while it does not, the value from before typing
stands and the hint says why. Enter keeps a valid value and refuses an invalid
one; Escape puts back the value from before typing.

A digit or a paste on the slider starts an entry that the slider edits while
it keeps focus, so a burst (`t4096` sent at once) lands in order: focus never
moves between keys that are already on their way.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import Reactive
from textual.widgets import Input, Static

from tui.model.scales import position_of
from tui.model.values import ValueSpec
from tui.widgets.repaint import KeptLabel, KeptLines, KeptRow, KeptStatic
from tui.widgets.stop_slider import StopSlider

_ENTRY_STARTS = "-+."
"""Besides digits, the keys that begin a typed value on a slider (`-5`, `.5k`)."""


_ENTER_KEYS = ("enter", "ctrl+j")
"""Enter, and the line feed an Enter typed before the terminal left cooked mode (before
the first frame) arrives as: `t32k` and Enter typed at once must not leave the entry open."""


class BoxInput(Input, KeptLines):
    """A text box styled once, as it mounts, and its lines kept between frames (a token
    key repaints one box of four; the compositor drew all four again, 0.15 ms each).
    Textual's `Input` sets its classes (valid, compact) as it is made, and each set
    restyled the box before it was on screen (`update_node_styles`); mounting styles it
    anyway: about 1 ms a box, 18 times as the explorer's body mounts."""

    def update_node_styles(self, animate: bool = True) -> None:
        if self.is_attached:
            super().update_node_styles(animate)


class ValueInput(BoxInput):
    """The exact-value box."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "restore", "Restore the value", show=False),
        Binding("ctrl+j", "submit", "Keep the value", show=False),
    ]

    # Input re-lays out the whole screen whenever its text length changes (its virtual
    # size is a layout reactive). This box has a fixed size, so a repaint is enough:
    # it keeps a slider step from costing a full-screen layout.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def action_restore(self) -> None:
        """Escape: the value from before typing, back on the slider."""
        field = self.field
        if field is not None:
            field.restore()

    @property
    def field(self) -> SliderField | None:
        """The field this box belongs to."""
        for node in self.ancestors:
            if isinstance(node, SliderField):
                return node
        return None

    def on_focus(self, event: events.Focus) -> None:
        field = self.field
        if field is not None:
            field.begin_typing()

    def on_blur(self, event: events.Blur) -> None:
        field = self.field
        if field is not None:
            field.end_typing()


class SliderField(KeptLines):
    """Label + slider + exact-value box (+ hint), posting `Changed` with the new value."""

    DEFAULT_CSS = """
    SliderField {
        height: auto;
        & > Horizontal { height: 1; }
        & .field-label { width: 16; }
        & ValueInput { width: 10; height: 1; margin-left: 1; }
        & .field-hint { height: auto; padding-left: 14; color: $text-muted; display: none; }
        & .field-hint.-shown { display: block; }
        & .field-hint.-invalid { color: $error; }
        & ValueInput.-editing { background: $accent 30%; }
    }
    """

    class Changed(Message):
        """The user set a new value, by slider or by typing."""

        def __init__(self, field: SliderField, value: float) -> None:
            self.field = field
            self.value = value
            super().__init__()

        @property
        def control(self) -> SliderField:
            """The field that changed."""
            return self.field

    def __init__(
        self,
        label: str,
        stops: Sequence[float],
        value: float,
        *,
        spec: ValueSpec,
        page: int = 4,
        tooltip: str | None = None,
        id: str | None = None,  # noqa: A002
        disabled: bool = False,
    ) -> None:
        super().__init__(id=id, disabled=disabled)
        self.label = label
        self.stops: tuple[float, ...] = tuple(stops)
        self.value = value
        self.spec = spec
        self.page = page
        self.tooltip = tooltip  # Textual's, for the whole field; the slider gets it too
        self._hint: tuple[str, tuple[str, ...]] = ("", ())
        self._shown_hint: tuple[str, tuple[str, ...]] | None = None
        self.before: float | None = None
        """The value from before typing, while the box is being typed in."""
        self.typed_note = ""
        """The parsed value or the reason, while typing."""

    def compose(self) -> ComposeResult:
        with KeptRow():
            yield KeptLabel(self.label, classes="field-label")
            yield StopSlider(len(self.stops), position_of(self.value, self.stops), page=self.page)
            yield ValueInput(self.spec.fmt(self.value), compact=True, select_on_focus=True)
        yield KeptStatic("", classes="field-hint", markup=False)

    def on_mount(self) -> None:
        self.slider.box_hook = self
        if self.tooltip:
            self.query_one(StopSlider).tooltip = self.tooltip

    # Found once: the screen shows every field's value on every key, and a query walks.
    @cached_property
    def slider(self) -> StopSlider:
        """The slider of this field."""
        return self.query_one(StopSlider)

    @cached_property
    def input(self) -> ValueInput:
        """The exact-value box of this field."""
        return self.query_one(ValueInput)

    @property
    def typing(self) -> bool:
        """True while the box holds text being typed."""
        return self.before is not None

    def set_value(self, value: float) -> None:
        """Show a value set from code (no `Changed`); text being typed is left alone."""
        self.value = value
        self.slider.set_position(position_of(value, self.stops))
        if not self.typing:
            self.show_value()

    def set_stops(self, stops: Sequence[float]) -> None:
        """Replace the stops (the token range follows the model) and keep the value."""
        self.stops = tuple(stops)
        self.slider.set_stops(len(self.stops), position_of(self.value, self.stops))

    def show_value(self) -> None:
        """Put the current value back in the box and clear any invalid mark."""
        box = self.input
        with box.prevent(Input.Changed):
            box.value = self.spec.fmt(self.value)
        box.remove_class("-invalid")

    def set_hint(self, text: str, *classes: str) -> None:
        """The hint line under the row (empty text hides it); typing notes take its place."""
        self._hint = (text, classes)
        self._paint_hint()

    def _paint_hint(self) -> None:
        invalid = self.input.has_class("-invalid")
        hint = (
            (self.typed_note, ("-invalid",) if invalid else ()) if self.typed_note else self._hint
        )
        if hint == self._shown_hint:
            return
        self._shown_hint = hint
        text, classes = hint
        line = self.query_one(".field-hint", Static)
        line.update(text)
        extra = [c for c in classes if c]
        line.set_classes(["field-hint", *extra, *(["-shown"] if text else [])])

    # --- typing ----------------------------------------------------------------------
    # Two ways in: the box itself (Tab or a click gives it focus; Input edits the text),
    # or keys on the slider (a digit or a paste starts an entry that the slider edits
    # while it keeps focus). The second never moves focus mid-burst, so every key of
    # `t4096` sent at once lands in order; both read the text through `_read`.

    def begin_typing(self) -> None:
        """Remember the value typing starts from (once per entry)."""
        if self.before is None:
            self.before = self.value

    def end_typing(self) -> None:
        """Leaving the entry: keep a valid value, otherwise put the earlier value back."""
        if self.before is not None and self.spec.parse(self.input.value) is None:
            self._commit(self.before)
        self._finish()

    def _finish(self) -> None:
        self.before, self.typed_note = None, ""
        self.input.remove_class("-editing")
        self.show_value()
        self._paint_hint()

    def _read(self, text: str) -> None:
        """Live preview: a value applies; text that is not one leaves the earlier value."""
        reading = self.spec.read(text)
        self.input.set_class(isinstance(reading, str), "-invalid")
        if isinstance(reading, str):
            self.typed_note = reading
            if self.before is not None:
                self._commit(self.before)
        else:
            self.typed_note = self.spec.shown(text, reading)
            self._commit(reading)
        self._paint_hint()

    def _edit(self, text: str) -> None:
        """The slider's entry changed: show it in the box and read it."""
        box = self.input
        with box.prevent(Input.Changed):
            box.value = text
        box.cursor_position = len(text)
        box.add_class("-editing")
        self._read(text)

    def submit(self) -> None:
        """Enter: keep a valid value and go back to the slider; refuse an invalid one."""
        reading = self.spec.read(self.input.value)
        if isinstance(reading, str):
            before = self.before
            restore = f" · Esc restores {self.spec.fmt(before)}" if before is not None else ""
            self.typed_note = reading + restore
            self._paint_hint()
            self.app.bell()
            return
        self._commit(reading)
        self._finish()
        if not self.slider.has_focus:
            self.screen.set_focus(self.slider)

    def restore(self) -> None:
        """Escape: the value from before typing, and back to the slider."""
        if self.before is not None:
            self._commit(self.before)
        self._finish()
        if not self.slider.has_focus:
            self.screen.set_focus(self.slider)

    def key_from_slider(self, event: events.Key) -> bool:
        """A key on the slider: a digit, sign or point starts an entry; while one is
        open, keys edit it. (`-5` is read whole and refused as negative, never as 5.)"""
        if not self.typing:
            if event.character is None or not (
                event.character.isdigit() or event.character in _ENTRY_STARTS
            ):
                return False
            self.begin_typing()
            self._edit(event.character)
        elif event.key in _ENTER_KEYS:
            self.submit()
        elif event.key == "escape":
            self.restore()
        elif event.key == "backspace":
            self._edit(self.input.value[:-1])
        elif event.is_printable and event.character is not None:
            self._edit(self.input.value + event.character)
        else:
            return False
        return True

    def leave_slider(self) -> None:
        """Focus left the slider: an entry it was editing ends (kept if valid)."""
        if self.typing and not self.input.has_focus:
            self.end_typing()

    def paste_from_slider(self, text: str) -> None:
        """A paste on the slider becomes the entry (its first non-empty line)."""
        self.begin_typing()
        self._edit(next((line.strip() for line in text.splitlines() if line.strip()), ""))

    def _commit(self, value: float, *, shown: bool = True) -> None:
        """Take a value; `shown=False` leaves the knob and the box to the owner's
        `set_value`, which shows it with everything it changes, in one frame."""
        if shown or value == self.value:
            self.slider.set_position(position_of(value, self.stops))
        if value == self.value:
            if not shown:
                self.show_value()
            return
        self.value = value
        self.post_message(self.Changed(self, value))

    @on(StopSlider.Moved)
    def _slider_moved(self, event: StopSlider.Moved) -> None:
        event.stop()
        self._commit(self.stops[event.index], shown=self.typing)
        if self.typing:
            self.show_value()

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if not event.input.has_focus:
            return  # a value set from code
        self.begin_typing()
        self._read(event.value)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()
