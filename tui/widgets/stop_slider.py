"""A one-line slider over a list of stops: keys, page keys, home/end, click and drag.

Textual 8 has no slider and textual-slider is int-only with arrow keys alone, so
this one is ours. It knows positions, not values: the owner maps a stop index
to a value. A typed value that falls between two stops is shown at a
fractional position; the next key press moves to the neighbouring stop.
`Moved` is posted only for user actions, so setting a position from code never
echoes back. A user's move is painted when the owner shows the value it leads to
(`set_position`), so the knob moves in the same frame as what it changes: one frame
per key, not the knob's alone and then, a 60 Hz tick later, the rest.
"""

from __future__ import annotations

import math
from typing import ClassVar, Protocol

from rich.text import Text
from textual import events
from textual.actions import parse as parse_action
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive

from tui.key_order import KeyHandled
from tui.widgets.repaint import OneLine


class TypingHook(Protocol):
    """The owner's text box, as the slider hands keys to it."""

    def key_from_slider(self, event: events.Key) -> bool:
        """Take a key; False when it is not one for the box."""

    def paste_from_slider(self, text: str) -> None:
        """Take pasted text."""

    def leave_slider(self) -> None:
        """Focus left the slider: close an entry it was editing."""


class StopSlider(OneLine, can_focus=True):
    """A track of evenly spaced stops with a knob."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "stop-slider--filled",
        "stop-slider--empty",
        "stop-slider--knob",
    }

    DEFAULT_CSS = """
    StopSlider {
        height: 1;
        width: 1fr;
        min-width: 8;
        & > .stop-slider--filled { color: $primary; }
        & > .stop-slider--empty { color: $foreground 30%; }
        & > .stop-slider--knob { color: $text; text-style: bold; }
        &:focus > .stop-slider--filled { color: $accent; }
        &:focus > .stop-slider--knob { color: $accent; }
        &:disabled > .stop-slider--filled { color: $foreground 30%; }
        &:disabled > .stop-slider--knob { color: $foreground 30%; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "step(1)", "More", show=False),
        Binding("left", "step(-1)", "Less", show=False),
        Binding("pageup", "page(1)", "Page up", show=False),
        Binding("pagedown", "page(-1)", "Page down", show=False),
        Binding("home", "to_end(-1)", "Minimum", show=False),
        Binding("end", "to_end(1)", "Maximum", show=False),
    ]

    position: reactive[float] = reactive(0.0)
    """Fractional stop index; whole numbers sit on a stop."""

    class Moved(Message):
        """The user moved the knob to a stop."""

        def __init__(self, slider: StopSlider, index: int) -> None:
            self.slider = slider
            self.index = index
            super().__init__()

        @property
        def control(self) -> StopSlider:
            """The slider that moved."""
            return self.slider

    def __init__(
        self,
        count: int,
        position: float = 0.0,
        *,
        page: int = 4,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        super().__init__(id=id, classes=classes, disabled=disabled)
        self.count = max(1, count)
        self.page = page
        self.set_reactive(StopSlider.position, self._clamp(position))
        self.box_hook: TypingHook | None = None
        """Where typed keys go (the owner's box): digits and pastes start typing."""
        self._unpainted = False
        """A user's move not painted yet: the owner's next `set_position` paints it."""
        self._took_key = False
        """The last key the slider had went no further (it moved the knob)."""

    def _clamp(self, position: float) -> float:
        return min(max(position, 0.0), float(self.count - 1))

    def set_stops(self, count: int, position: float) -> None:
        """Change the number of stops and place the knob, without posting `Moved`."""
        self.count = max(1, count)
        self.position = self._clamp(position)
        self.refresh()

    def set_position(self, position: float) -> None:
        """Place the knob from code, without posting `Moved` (and paint a user's move)."""
        if self._unpainted:
            self._unpainted = False
            self.refresh()
        self.position = self._clamp(position)

    @property
    def index(self) -> int:
        """The nearest stop."""
        return round(self.position)

    def _move_to(self, index: int) -> None:
        index = min(max(index, 0), self.count - 1)
        if index == self.position:
            return
        # Not painted here: the owner shows it with what it changes (`set_position`).
        self.set_reactive(StopSlider.position, float(index))
        self._unpainted = True
        self.post_message(self.Moved(self, index))

    def action_step(self, direction: int) -> None:
        """One stop up or down (from between stops, to the neighbour on that side)."""
        if direction > 0:
            self._move_to(math.floor(self.position) + 1)
        else:
            self._move_to(math.ceil(self.position) - 1)

    def action_page(self, direction: int) -> None:
        """`page` stops up or down."""
        base = math.floor(self.position) if direction > 0 else math.ceil(self.position)
        self._move_to(base + direction * self.page)

    def action_to_end(self, direction: int) -> None:
        """The first or the last stop."""
        self._move_to(self.count - 1 if direction > 0 else 0)

    def _knob_column(self, width: int) -> int:
        if self.count <= 1 or width <= 1:
            return 0
        return round(self.position / (self.count - 1) * (width - 1))

    def _index_at(self, x: int) -> int:
        width = self.content_region.width
        if self.count <= 1 or width <= 1:
            return 0
        return round(min(max(x, 0), width - 1) / (width - 1) * (self.count - 1))

    def line_key(self) -> object:
        return (self.position, self.count)

    def line(self, width: int) -> Text:
        knob = self._knob_column(width)
        filled = self.kept.component("stop-slider--filled")
        empty = self.kept.component("stop-slider--empty")
        knob_style = self.kept.component("stop-slider--knob")
        text = Text(no_wrap=True, overflow="crop")
        text.append("━" * knob, filled)
        text.append("●", knob_style)
        text.append("─" * max(0, width - knob - 1), empty)
        return text

    def on_key(self, event: events.Key) -> None:
        # Digits start an entry in the owner's box; while one is open, keys edit it.
        hook = self.box_hook
        if hook is not None and hook.key_from_slider(event):
            event.stop()
            event.prevent_default()
            return
        # The slider's own keys move it here, as its bindings would: Textual runs a
        # focused widget's binding only once the key has bubbled up to the app, through
        # six containers' queues (a quarter of a token key's messages).
        move = _MOVES.get(event.key)
        self._took_key = move is not None
        if move is not None:
            event.stop()
            event.prevent_default()
            name, arguments = move
            getattr(self, f"action_{name}")(*arguments)

    def on_key_handled(self, message: KeyHandled) -> None:
        # The app's key order posts this right behind each key. A key the slider took
        # went no further, so no queue above holds it: the answer goes straight to the
        # app instead of through the six containers (tui/key_order.py).
        if self._took_key:
            self._took_key = False
            message.stop()
            self.app.post_message(KeyHandled(message.number))

    def on_blur(self, event: events.Blur) -> None:
        if self.box_hook is not None:
            self.box_hook.leave_slider()

    def on_paste(self, event: events.Paste) -> None:
        if self.box_hook is not None and event.text:
            event.stop()
            self.box_hook.paste_from_slider(event.text)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        if self.disabled:
            return
        self.capture_mouse()
        self.focus()
        self._move_to(self._index_at(event.x - self.gutter.left))

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self.app.mouse_captured is self:
            self._move_to(self._index_at(event.x - self.gutter.left))

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self.app.mouse_captured is self:
            self.release_mouse()


_MOVES: dict[str, tuple[str, tuple[object, ...]]] = {
    b.key: parse_action(b.action)[1:] for b in StopSlider.BINDINGS if isinstance(b, Binding)
}
"""Each of `StopSlider.BINDINGS`' keys: its action's name and arguments (`step`, (1,))."""
