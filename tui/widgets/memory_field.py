"""Available memory: detected, a device preset, or a typed size.

Typing a valid size in `core.value_grammar`'s forms (`24GB`, `24GiB`, `512M`,
`1073741824`; binary units, as the `--memory-limit` flag reads them) switches the
picker to "typed size"; a text that is not one is refused with its reason on the
line below, and the estimate keeps the last size. Picking a preset shows its exact
limit in the box.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events, on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Input, Select, Static

from core.display_text import clean_text
from core.estimate.available import AvailableMemory
from core.units import format_bytes_short
from core.value_grammar import Refused, read_byte_size
from tui.model.presets import (
    CUSTOM,
    DETECTED,
    DEVICE_FREE,
    DEVICE_KEYS,
    DEVICE_TOTAL,
    PRESETS,
    PRESETS_BY_KEY,
)
from tui.model.state import MemoryChoice
from tui.widgets.repaint import KeptLabel, KeptLines, KeptRow, KeptStatic
from tui.widgets.slider_field import BoxInput

if TYPE_CHECKING:
    from core.device_memory import DeviceMemory


def _options(
    detected: AvailableMemory | None, device: DeviceMemory | None, problem: str
) -> list[tuple[str, str]]:
    shown = f"{format_bytes_short(detected.bytes)}" if detected else "detecting…"
    options = [(f"This machine · {shown}", DETECTED)]
    if device is not None:
        name = clean_text(device.device)
        options.append(
            (f"This device · total {format_bytes_short(device.total)} · {name}", DEVICE_TOTAL)
        )
        options.append(
            (
                f"This device · free {format_bytes_short(device.free)}, "
                f"{format_bytes_short(device.used)} used · {name}",
                DEVICE_FREE,
            )
        )
    else:
        words = problem or "reading…"
        options += [
            (f"This device · total ({words})", DEVICE_TOTAL),
            (f"This device · free ({words})", DEVICE_FREE),
        ]
    options += [(p.label, p.key) for p in PRESETS]
    options.append(("Typed size", CUSTOM))
    return options


class MemoryField(KeptLines):
    """Picker + size box; posts `Changed` with a `MemoryChoice`."""

    DEFAULT_CSS = """
    MemoryField {
        height: auto;
        & > Horizontal { height: 1; }
        & .field-label { width: 16; }
        & Select { width: 1fr; }
        & Input { width: 12; height: 1; margin-left: 1; }
        & .field-hint { height: auto; padding-left: 14; color: $error; display: none; }
        & .field-hint.-shown { display: block; }
    }
    """

    class Changed(Message):
        """The user chose another source of available memory."""

        def __init__(self, field: MemoryField, choice: MemoryChoice) -> None:
            self.field = field
            self.choice = choice
            super().__init__()

    def __init__(
        self,
        choice: MemoryChoice,
        *,
        label: str = "Available",
        id: str | None = None,  # noqa: A002
    ) -> None:
        super().__init__(id=id)
        self.choice = choice
        self.label = label
        self.detected: AvailableMemory | None = None
        self.device: DeviceMemory | None = None
        self._device_problem = ""

    def compose(self) -> ComposeResult:
        with KeptRow():
            yield KeptLabel(self.label, classes="field-label")
            yield Select(
                _options(None, None, ""), value=self.choice.key, allow_blank=False, compact=True
            )
            yield BoxInput(self._size_text(), placeholder="size, e.g. 64GB", compact=True)
        yield KeptStatic("", classes="field-hint", markup=False)

    def _size_text(self) -> str:
        if self.choice.key == CUSTOM:
            return str(self.choice.custom_bytes)
        if self.choice.key in PRESETS_BY_KEY:
            return str(PRESETS_BY_KEY[self.choice.key].bytes)
        if self.choice.key in DEVICE_KEYS:
            from core.device.memory import device_budget

            found = (
                device_budget(DEVICE_KEYS[self.choice.key], self.device) if self.device else None
            )
            return str(found.bytes) if found else ""
        return str(self.detected.bytes) if self.detected else ""

    def set_detected(self, detected: AvailableMemory) -> None:
        """Show the detected size in the picker."""
        self.detected = detected
        self._relabel()

    def set_device(self, device: DeviceMemory | None, problem: str) -> None:
        """Show the device's name, total, used and free memory in the picker."""
        self.device, self._device_problem = device, problem
        self._relabel()

    def _relabel(self) -> None:
        select: Select[str] = self.query_one(Select)
        with select.prevent(Select.Changed):
            select.set_options(_options(self.detected, self.device, self._device_problem))
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
            self._show_reason("")

    def _show_reason(self, reason: str) -> None:
        hint = self.query_one(".field-hint", Static)
        if hint.content != reason:  # an update lays out the whole screen again (~20 ms)
            hint.update(reason)
        hint.set_class(bool(reason), "-shown")

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
            size = read_byte_size(box.value, minimum=1)
            if isinstance(size, Refused):
                return
            choice = MemoryChoice(CUSTOM, size)
        else:
            choice = MemoryChoice(key)
        if choice == self.choice:
            return  # the picker's own value as it mounts (a pick always changes the value)
        self.choice = choice
        self._show_size()
        self.post_message(self.Changed(self, self.choice))

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if not event.input.has_focus:
            # A value set from code: the box posts one as it is made, and reading it as
            # typed made the size a typed one for a moment (two recomputes at start-up).
            return
        size = read_byte_size(event.value, minimum=1)
        event.input.set_class(isinstance(size, Refused), "-invalid")
        if isinstance(size, Refused):
            # 0 is no limit to compare against: "This machine" is the detected one.
            zero = "; pick This machine to detect it" if "more than 0 " in size.reason else ""
            self._show_reason(f"{self.label} {size.reason}{zero}")
            return
        self._show_reason("")
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
