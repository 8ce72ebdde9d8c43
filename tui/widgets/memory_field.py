"""Available memory: detected, a device preset, or a size typed in mlxcel's grammar.

Typing a valid size (`64GB`, `512M`, `1073741824`) switches the picker to
"typed size"; picking a preset shows its exact limit in the box.
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, Select

from core.estimate.available import AvailableMemory
from core.memory_size import parse_optional_memory_size
from core.units import format_bytes_short
from tui.model.presets import CUSTOM, DETECTED, PRESETS, PRESETS_BY_KEY
from tui.model.state import MemoryChoice


def _options(detected: AvailableMemory | None) -> list[tuple[str, str]]:
    shown = f"{format_bytes_short(detected.bytes)}" if detected else "detecting…"
    options = [(f"This machine · {shown}", DETECTED)]
    options += [(p.label, p.key) for p in PRESETS]
    options.append(("Typed size", CUSTOM))
    return options


class MemoryField(Widget):
    """Picker + size box; posts `Changed` with a `MemoryChoice`."""

    DEFAULT_CSS = """
    MemoryField {
        height: auto;
        & > Horizontal { height: 1; }
        & .field-label { width: 16; }
        & Select { width: 1fr; }
        & Input { width: 12; height: 1; margin-left: 1; }
    }
    """

    class Changed(Message):
        """The user chose another source of available memory."""

        def __init__(self, field: MemoryField, choice: MemoryChoice) -> None:
            self.field = field
            self.choice = choice
            super().__init__()

    def __init__(self, choice: MemoryChoice, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.choice = choice
        self.detected: AvailableMemory | None = None

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label("Available", classes="field-label")
            yield Select(_options(None), value=self.choice.key, allow_blank=False, compact=True)
            yield Input(self._size_text(), placeholder="size, e.g. 64GB", compact=True)

    def _size_text(self) -> str:
        if self.choice.key == CUSTOM:
            return str(self.choice.custom_bytes)
        if self.choice.key in PRESETS_BY_KEY:
            return str(PRESETS_BY_KEY[self.choice.key].bytes)
        return str(self.detected.bytes) if self.detected else ""

    def set_detected(self, detected: AvailableMemory) -> None:
        """Show the detected size in the picker."""
        self.detected = detected
        select: Select[str] = self.query_one(Select)
        with select.prevent(Select.Changed):
            select.set_options(_options(detected))
            select.value = self.choice.key
            # Same key, new label: run the value watcher again to repaint it.
            select.mutate_reactive(Select.value)  # type: ignore[misc]
        self._show_size()

    def set_choice(self, choice: MemoryChoice) -> None:
        """Choose from code (no `Changed`)."""
        self.choice = choice
        select: Select[str] = self.query_one(Select)
        with select.prevent(Select.Changed):
            select.value = choice.key
        self._show_size()

    def _show_size(self) -> None:
        box = self.query_one(Input)
        if not box.has_focus:
            with box.prevent(Input.Changed):
                box.value = self._size_text()
            box.remove_class("-invalid")

    @on(Select.Changed)
    def _picked(self, event: Select.Changed) -> None:
        event.stop()
        key = str(event.value)
        if key == CUSTOM:
            box = self.query_one(Input)
            if event.select.has_focus_within:
                # A user who picks "custom" types the size next; a value set at start-up
                # (--memory-limit) must not take the focus from the token slider.
                box.focus()
            size = parse_optional_memory_size(box.value)
            if size is None:
                return
            self.choice = MemoryChoice(CUSTOM, size)
        else:
            self.choice = MemoryChoice(key)
        self._show_size()
        self.post_message(self.Changed(self, self.choice))

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        size = parse_optional_memory_size(event.value)
        event.input.set_class(size is None, "-invalid")
        if size is None:
            return
        self.choice = MemoryChoice(CUSTOM, size)
        select: Select[str] = self.query_one(Select)
        with select.prevent(Select.Changed):
            select.value = CUSTOM
        self.post_message(self.Changed(self, self.choice))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._show_size()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self._show_size()
