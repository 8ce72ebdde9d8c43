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

from tui.model.control_specs import CONTROLS, ControlSpec, KeyAction, keyed
from tui.model.state import ExplorerState

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


_ON_GGUF = {
    "c C": "Copy cmd: the vramscope / llama-server command line",
    "m": "Your command on a GGUF (llama.cpp's own, as vramscope run)",
}
GGUF_SCREEN_KEYS: tuple[tuple[str, str], ...] = tuple(
    (key, _ON_GGUF.get(key, what)) for key, what in SCREEN_KEYS if key not in ("v", "R")
)
"""The screen's own keys on a GGUF: llama-server's line is `C`'s, `m` runs your command,
and mlxcel's verdict basis and the recalibration do not apply."""


def _applying(specs: tuple[ControlSpec, ...], llama_cpp: bool) -> list[ControlSpec]:
    state = ExplorerState(llama_cpp=llama_cpp)
    return [spec for spec in specs if spec.applies(state)]


def control_keys(llama_cpp: bool = False) -> tuple[tuple[str, str], ...]:
    """The keys of the controls of a safetensors model (`llama_cpp`: of a GGUF), from
    their descriptors: the plain jumps on one row, then each jump with a note of its own
    and each key that cycles."""
    jumps = _applying(keyed(KeyAction.JUMP), llama_cpp)
    plain = [spec for spec in jumps if not spec.key_help]
    rows = [(" ".join(s.key for s in plain), "jump to " + ", ".join(s.label for s in plain))]
    rows += [(spec.key, spec.key_help) for spec in jumps if spec.key_help]
    rows += [(spec.key, spec.key_help) for spec in _applying(keyed(KeyAction.CYCLE), llama_cpp)]
    return tuple(rows)


def help_keys(llama_cpp: bool = False) -> tuple[tuple[str, str], ...]:
    """Every key of the screen, for a safetensors model or (`llama_cpp`) a GGUF."""
    screen = GGUF_SCREEN_KEYS if llama_cpp else SCREEN_KEYS
    return (*NAVIGATION, *control_keys(llama_cpp), *screen)


def control_rows(llama_cpp: bool = False) -> tuple[tuple[str, str], ...]:
    """The controls of the model on screen, in the panel's order: mlxcel's for a
    safetensors model, llama.cpp's for a GGUF, and those of both."""
    return tuple((spec.label, spec.help) for spec in _applying(CONTROLS, llama_cpp))


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
    """Keys and controls (of a GGUF with `llama_cpp`: llama.cpp's)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close help"),
    ]

    def __init__(self, llama_cpp: bool = False) -> None:
        super().__init__()
        self.llama_cpp = llama_cpp

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help") as box:
            box.border_title = "vramscope · keys and controls"
            box.border_subtitle = "Esc closes"
            yield Static(_table("Keys", help_keys(self.llama_cpp)))
            controls = control_rows(self.llama_cpp)
            yield Static(_table("Controls", controls), classes="help-section")
            yield Static(
                Text(
                    "Mouse: click or drag a slider, click an option or a model. "
                    "More in docs/tui.md.",
                    "dim",
                ),
                classes="help-section",
            )
