"""`?`: every key and control on one page (Esc, ? or q closes it); the controls' rows
and keys are their descriptors' (`tui.model.control_specs`)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.model.control_specs import CONTROLS, KeyAction, keyed

NAVIGATION: tuple[tuple[str, str], ...] = (
    ("Tab Shift+Tab", "next / previous control"),
    ("← →", "slider one stop down / up; pick an option"),
    ("PgDn PgUp", "slider several stops; Home End: its ends"),
    ("0-9 on a slider", "type an exact value; Enter applies"),
)
SCREEN_KEYS: tuple[tuple[str, str], ...] = (
    ("/", "filter the Models; ↓ into the list, Enter picks or reads org/name from the Hub"),
    ("c C", "Copy cmd: the vramscope / mlxcel command line"),
    ("m", "Measure the model on screen with w's choice (again: cancel)"),
    ("M", "Your command: run it, its peak beside the estimate (as vramscope run)"),
    ("H", "measurement History; e there exports the table"),
    ("v", "verdict against mlxcel's ⇄ the calibrated total"),
    ("R", "after m: recalibrate from the history"),
    ("f", "what fits (vramscope fit): / filter, s S sort, Enter opens"),
    ("Ctrl+P", "command palette: every control, backend, budget, preset, device count"),
    ("Esc", "cancel a measurement, else back to the token slider"),
    ("? q", "this Help / Quit"),
)
"""The screen's own keys (no control's): after the controls' keys."""


def control_keys() -> tuple[tuple[str, str], ...]:
    """The controls' keys, from their descriptors: the plain jumps on one row, then each
    jump with a note of its own and each key that cycles."""
    jumps = keyed(KeyAction.JUMP)
    plain = [spec for spec in jumps if not spec.key_help]
    rows = [(" ".join(s.key for s in plain), "jump to " + ", ".join(s.label for s in plain))]
    rows += [(spec.key, spec.key_help) for spec in jumps if spec.key_help]
    rows += [(spec.key, spec.key_help) for spec in keyed(KeyAction.CYCLE)]
    return tuple(rows)


KEYS: tuple[tuple[str, str], ...] = (*NAVIGATION, *control_keys(), *SCREEN_KEYS)
CONTROL_ROWS: tuple[tuple[str, str], ...] = tuple((spec.label, spec.help) for spec in CONTROLS)
"""Every control, in the panel's order."""


def _table(title: str, rows: tuple[tuple[str, str], ...]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.title = title
    table.title_style = "bold"
    table.title_justify = "left"
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, what in rows:
        table.add_row(key, what)
    return table


class HelpScreen(ModalScreen[None]):
    """Keys and controls."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close help"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help") as box:
            box.border_title = "vramscope · keys and controls"
            box.border_subtitle = "Esc closes"
            yield Static(_table("Keys", KEYS))
            yield Static(_table("Controls", CONTROL_ROWS), classes="help-section")
            yield Static(
                Text(
                    "Mouse: click or drag a slider, click an option or a model. "
                    "More in docs/tui.md.",
                    "dim",
                ),
                classes="help-section",
            )
