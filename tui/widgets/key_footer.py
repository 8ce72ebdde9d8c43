"""The footer: the screen's keys in binding order, as many as fit, never a key cut in half.

Textual's footer scrolls what does not fit under the command-palette key, so a narrow
terminal showed half a word and a stray letter after `^p palette`. This one keeps the
keys that fit whole (Quit and Help come first, so they always do) and leaves the rest to
`?` and the palette; under 120 columns it drops its spacing.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer

from tui.widgets.repaint import KeptLines

PALETTE_ROOM = 14
"""Columns the docked `▏^p palette` key takes, with its padding."""
COMPACT_BELOW = 120


@runtime_checkable
class FooterKeyLike(Protocol):
    """What the footer measures a key by: Textual's footer keys carry both (its class
    lives in a private module, `textual.widgets._footer`, so it is not imported)."""

    key_display: str
    description: str


def key_width(key: FooterKeyLike, compact: bool) -> int:
    """Columns one key takes: `q Quit ` compact, ` q Quit ` with the spacing."""
    if compact:
        return len(key.key_display) + 1 + len(key.description) + 1
    return len(key.key_display) + len(key.description) + 3


def _born(key: Widget, compact: bool) -> None:
    """Give a new key the footer's `compact` before it is mounted. Textual binds the
    key's to the footer's, but a key starts compact and is only then set to the
    footer's, its class toggled and its styles applied again: twice for every key on
    every recompose, about half the processor time of mounting the explorer's body."""
    descriptor: Any = getattr(type(key), "compact")  # noqa: B009 (the class's reactive, not the value)
    key.set_reactive(descriptor, compact)
    key.set_class(compact, "-compact", update=False)
    if isinstance(key, FooterKeyLike) and key.description and not key.has_class("-grouped"):
        # Its width given, as Textual's `width: auto` would find it (the key and its
        # description, padded: ` q Quit `, or `q Quit` compact) by rendering the key
        # once more in every frame that lays the footer out.
        text = cell_len(key.key_display) + cell_len(key.description)
        key.styles.width = text + (1 if compact else 3)


class KeyFooter(Footer, KeptLines):
    """The keys that fit whole, in binding order. Its own lines (the background behind
    the keys) are kept between frames: every key repainted the footer row unchanged."""

    DEFAULT_CSS = """
    KeyFooter.-compact FooterKey.-command-palette { padding-right: 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._width = 0
        self._composed_from: tuple[object, ...] | None = None
        """What the keys on screen were composed from (`_made_from`); None before any."""

    def _made_from(self) -> tuple[object, ...]:
        """Everything Textual's `Footer.compose` and this one make the keys from: the
        bindings of the keys shown (each key, its display, words, action, group, whether
        it is enabled, its tooltip), the footer's width, `compact` and palette switch."""
        get_display = self.app.get_key_display
        palette = self.app.COMMAND_PALETTE_BINDING
        return (
            self.size.width,
            self.compact,
            self.show_command_palette,
            *(
                (b.key, get_display(b), b.description, b.action, b.group, on, tip)
                for key, (_, b, on, tip) in self.screen.active_bindings.items()
                if b.show or key == palette  # the palette's key is shown, whatever its own
            ),
        )

    def compose(self) -> ComposeResult:
        width = self.size.width
        room = width - PALETTE_ROOM
        compact = self.compact
        made_from = self._made_from()
        composed = False
        for widget in super().compose():
            composed = True
            if isinstance(widget, FooterKeyLike) and not widget.has_class("-command-palette"):
                room -= key_width(widget, compact)
                if width and room < 0:
                    continue  # from here on the keys are in `?` and the palette only
                _born(widget, compact)
            yield widget
        # Textual's footer composes nothing until the screen's bindings are ready.
        self._composed_from = made_from if composed else None

    async def recompose(self) -> None:
        # Textual recomposes the footer whenever the screen's keys may have changed (focus
        # moved, widgets mounted: five times while the explorer starts); mostly the same
        # keys come back, and removing, mounting and styling them again took the time of
        # the body's own frame. They are composed anew only when what they are made from
        # changed: comparing keys composed anew with those on screen cost 8% of a start.
        if not self.is_attached:
            return  # its screen is gone (Textual's own recompose checks the same)
        if self._composed_from is not None and self._composed_from == self._made_from():
            return
        await super().recompose()

    def on_resize(self, event: events.Resize) -> None:
        width = event.size.width
        if width != self._width:
            self._width = width
            self.compact = width < COMPACT_BELOW
            self.refresh(recompose=True)
