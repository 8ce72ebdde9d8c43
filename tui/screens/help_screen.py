"""`?`: every key and control on one page."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("Tab / Shift+Tab", "next / previous control"),
    ("← →", "move a slider one stop, or pick an option"),
    ("PgUp PgDn", "move a slider several stops"),
    ("Home End", "slider minimum / maximum"),
    ("0-9 on a slider", "type an exact value (Enter applies, Esc leaves)"),
    ("t  i  b  h", "jump to max tokens, in-flight, batch, headroom"),
    ("a", "jump to available memory"),
    ("k", "KV dtype: fp16 ⇄ int8"),
    ("n", "next backend: ROCm → CUDA → Metal → CPU"),
    ("/", "filter the model list (↓ into the list, Enter picks)"),
    ("c  /  C", "copy the vramscope / mlxcel command line"),
    ("Ctrl+P", "command palette: backends, budgets, presets, copy"),
    ("?", "this help"),
    ("q", "quit"),
)

CONTROLS: tuple[tuple[str, str], ...] = (
    ("Max tokens", "context length, 256 up to the model's trained context (log scale)"),
    ("In-flight MiB", "MLX_ROCM_MAX_INFLIGHT_MB, 0 to 8192; 0 = bound off, not modelled"),
    ("Batch", "concurrent sequences (KV and activation scale with it)"),
    ("KV dtype", "fp16, or int8 (half the KV bytes)"),
    ("Headroom", "MLXCEL_HEADROOM_FACTOR: overhead = (factor - 1) x (weights + KV)"),
    ("Backend", "only ROCm builds add the in-flight reserve"),
    ("Available", "this machine, a device preset (MLX's limit) or a typed size"),
)


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
    """Keys and controls; any of Esc, ? or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close help"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(_table("Keys", KEYS))
            yield Static(_table("Controls", CONTROLS), classes="help-section")
            yield Static(
                Text(
                    "Mouse: click or drag a slider, click an option or a model. "
                    "Every change re-estimates at once; models are read in the background.",
                    "dim",
                ),
                classes="help-section",
            )
