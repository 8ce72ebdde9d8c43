"""One control row: a label, a stop slider and a box for typing an exact value.

The slider moves between stops; the box takes any value the field's parser
accepts (a context of 5000 tokens, an in-flight budget of 700 MiB), and the
knob then sits between stops. A digit typed on the slider jumps into the box.
An optional hint line below says why a control is inactive or what a value
means.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.geometry import Size
from textual.message import Message
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Input, Label, Static

from tui.scales import position_of
from tui.widgets.stop_slider import StopSlider

Parser = Callable[[str], float | None]
Formatter = Callable[[float], str]


class ValueInput(Input):
    """The exact-value box: Escape or leaving it restores the current value."""

    # Input re-lays out the whole screen whenever its text length changes (its virtual
    # size is a layout reactive). This box has a fixed size, so a repaint is enough:
    # it keeps a slider step from costing a full-screen layout.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def start_typing(self, text: str) -> None:
        """Focus with `text` typed in and the cursor after it (not everything selected)."""
        self.select_on_focus = False
        self.value = text
        self.cursor_position = len(text)
        self.focus()
        self.call_after_refresh(setattr, self, "select_on_focus", True)

    def on_blur(self, event: events.Blur) -> None:
        parent = self.parent
        while parent is not None and not isinstance(parent, SliderField):
            parent = parent.parent
        if isinstance(parent, SliderField):
            parent.show_value()


class SliderField(Widget):
    """Label + slider + exact-value box (+ hint), posting `Changed` with the new value."""

    DEFAULT_CSS = """
    SliderField {
        height: auto;
        & > Horizontal { height: 1; }
        & .field-label { width: 14; }
        & ValueInput { width: 10; height: 1; margin-left: 1; }
        & .field-hint { height: auto; padding-left: 14; color: $text-muted; display: none; }
        & .field-hint.-shown { display: block; }
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
        parse: Parser,
        fmt: Formatter = str,
        page: int = 4,
        tooltip: str | None = None,
        id: str | None = None,  # noqa: A002
        disabled: bool = False,
    ) -> None:
        super().__init__(id=id, disabled=disabled)
        self.label = label
        self.stops: tuple[float, ...] = tuple(stops)
        self.value = value
        self.parse = parse
        self.fmt = fmt
        self.page = page
        self._tooltip = tooltip
        self._hint: tuple[str, tuple[str, ...]] = ("", ())

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label(self.label, classes="field-label")
            yield StopSlider(len(self.stops), position_of(self.value, self.stops), page=self.page)
            yield ValueInput(self.fmt(self.value), compact=True, select_on_focus=True)
        yield Static("", classes="field-hint", markup=False)

    def on_mount(self) -> None:
        if self._tooltip:
            self.query_one(StopSlider).tooltip = self._tooltip

    @property
    def slider(self) -> StopSlider:
        """The slider of this field."""
        return self.query_one(StopSlider)

    @property
    def input(self) -> ValueInput:
        """The exact-value box of this field."""
        return self.query_one(ValueInput)

    def set_value(self, value: float) -> None:
        """Show a value set from code (no `Changed`)."""
        self.value = value
        self.slider.set_position(position_of(value, self.stops))
        if not self.input.has_focus:
            self.show_value()

    def set_stops(self, stops: Sequence[float]) -> None:
        """Replace the stops (the token range follows the model) and keep the value."""
        self.stops = tuple(stops)
        self.slider.set_stops(len(self.stops), position_of(self.value, self.stops))

    def show_value(self) -> None:
        """Put the current value back in the box and clear any invalid mark."""
        box = self.input
        with box.prevent(Input.Changed):
            box.value = self.fmt(self.value)
        box.remove_class("-invalid")

    def set_hint(self, text: str, *classes: str) -> None:
        """Show a hint line under the row (empty text hides it)."""
        if (text, classes) == self._hint:
            return
        self._hint = (text, classes)
        hint = self.query_one(".field-hint", Static)
        hint.update(text)
        extra = [c for c in classes if c]
        hint.set_classes(["field-hint", *extra, *(["-shown"] if text else [])])

    def _commit(self, value: float) -> None:
        if value == self.value:
            return
        self.value = value
        self.post_message(self.Changed(self, value))

    @on(StopSlider.Moved)
    def _slider_moved(self, event: StopSlider.Moved) -> None:
        event.stop()
        self._commit(self.stops[event.index])
        self.show_value()

    @on(StopSlider.DigitTyped)
    def _digit_typed(self, event: StopSlider.DigitTyped) -> None:
        event.stop()
        self.input.start_typing(event.character)

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        value = self.parse(event.value)
        event.input.set_class(value is None, "-invalid")
        if value is not None:
            self.slider.set_position(position_of(value, self.stops))
            self._commit(value)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.show_value()
        self.slider.focus()
