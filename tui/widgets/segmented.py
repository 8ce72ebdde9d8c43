"""A one-line choice among a few options, all visible: `ROCm  CUDA  Metal  CPU`.

Every option stays on screen, so the current choice reads at a glance (and in a
screenshot). Left/right move the choice; a click picks the option under the
pointer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive

from tui.widgets.repaint import KeptLines

_GAP = 1


class Segmented(KeptLines, can_focus=True):
    """Options side by side; the chosen one highlighted."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"segmented--option", "segmented--chosen"}

    DEFAULT_CSS = """
    Segmented {
        height: 1;
        width: auto;
        & > .segmented--option { color: $text-muted; }
        & > .segmented--chosen { color: $text; background: $primary-muted; text-style: bold; }
        &:focus > .segmented--chosen { background: $accent; color: $background; }
        &:disabled > .segmented--chosen { background: $surface; color: $text-disabled; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "move(1)", "Next", show=False),
        Binding("left", "move(-1)", "Previous", show=False),
        Binding("home", "move_to(0)", "First", show=False),
        Binding("end", "move_to(-1)", "Last", show=False),
    ]

    index: reactive[int] = reactive(0)

    class Changed(Message):
        """The user picked another option."""

        def __init__(self, segmented: Segmented, index: int) -> None:
            self.segmented = segmented
            self.index = index
            super().__init__()

        @property
        def control(self) -> Segmented:
            """The control that changed."""
            return self.segmented

    def __init__(
        self,
        options: Sequence[str],
        index: int = 0,
        *,
        id: str | None = None,  # noqa: A002
        disabled: bool = False,
    ) -> None:
        super().__init__(id=id, disabled=disabled)
        self.options = tuple(options)
        self.set_reactive(Segmented.index, index)

    def set_index(self, index: int) -> None:
        """Choose from code (no `Changed`)."""
        self.index = index

    def _pick(self, index: int) -> None:
        index %= len(self.options)
        if index != self.index:
            self.index = index
            self.post_message(self.Changed(self, index))

    def action_move(self, step: int) -> None:
        """The neighbouring option (wrapping)."""
        self._pick(self.index + step)

    def action_move_to(self, index: int) -> None:
        """The first (0) or last (-1) option."""
        self._pick(index)

    def _spans(self) -> list[tuple[int, int]]:
        spans, x = [], 0
        for label in self.options:
            width = len(label) + 2
            spans.append((x, x + width))
            x += width + _GAP
        return spans

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return sum(len(o) + 2 for o in self.options) + _GAP * (len(self.options) - 1)

    def render(self) -> Text:
        option = self.get_component_rich_style("segmented--option")
        chosen = self.get_component_rich_style("segmented--chosen")
        text = Text(no_wrap=True, overflow="crop")
        for i, label in enumerate(self.options):
            if i:
                text.append(" " * _GAP)
            text.append(f" {label} ", chosen if i == self.index else option)
        return text

    def on_click(self, event: events.Click) -> None:
        x = event.x - self.gutter.left
        for i, (start, end) in enumerate(self._spans()):
            if start <= x < end:
                self.focus()
                self._pick(i)
                return
