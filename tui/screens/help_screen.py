"""`?`: every key and control on one page (Esc, ? or q closes it)."""

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
    ("Tab Shift+Tab", "next / previous control"),
    ("← →", "slider one stop down / up; pick an option"),
    ("PgDn PgUp", "slider several stops; Home End: its ends"),
    ("0-9 on a slider", "type an exact value; Enter applies"),
    ("t i b h a", "jump to Max tokens, In-flight MiB, Batch, Overhead factor, Available"),
    ("p", "jump to Per device (two devices or more)"),
    ("k", "KV dtype: fp16 ⇄ int8"),
    ("n", "next Backend: ROCm → CUDA → Metal → CPU"),
    ("d", "Devices: 1 → 2 → … → 8 → 1 (two or more: TP/PP, Per device, ranks)"),
    ("s", "TP/PP: tensor parallel ⇄ pipeline parallel"),
    ("w", "Measure with: the engine m runs (torch ⇄ mlx)"),
    ("/", "filter the Models; ↓ into the list, Enter picks or reads org/name from the Hub"),
    ("c C", "Copy cmd: the vramscope / mlxcel command line"),
    ("m", "Measure the model on screen (again: cancel)"),
    ("H", "measurement History; e there exports the table"),
    ("v", "verdict against mlxcel's ⇄ the calibrated total"),
    ("R", "after m: recalibrate from the history"),
    ("f", "what fits (vramscope fit): / filter, s S sort, Enter opens"),
    ("Ctrl+P", "command palette: every control, backend, budget, preset, device count"),
    ("Esc", "cancel a measurement, else back to the token slider"),
    ("? q", "this Help / Quit"),
)

CONTROLS: tuple[tuple[str, str], ...] = (
    ("Max tokens", "context, 256 to the trained context (log scale)"),
    ("In-flight MiB", "MLX_ROCM_MAX_INFLIGHT_MB; 0 = off, not modelled"),
    ("Batch", "concurrent sequences; KV and activation scale"),
    ("KV dtype", "fp16, or int8: half the KV bytes"),
    ("Overhead factor", "MLXCEL_HEADROOM_FACTOR: overhead = (factor - 1) × (weights + KV)"),
    ("Backend", "only ROCm builds add the in-flight reserve"),
    ("Quantize as", "vramscope's what-if: mlx-lm's 8/4-bit weights (16/32-bit models)"),
    ("Available", "this machine, a device preset, or a typed size"),
    ("Devices", "split the model over 2-8 devices (d)"),
    ("TP/PP", "tensor parallel (mlx-lm shard) or pipeline parallel (s)"),
    ("Per device", "each device's available memory, in rank order: 24GB,16GB (p)"),
    ("Measure with", "torch (vramscope's engine) or mlx (real MLX through mlx-lm) (w)"),
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
    """Keys and controls."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close help"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help") as box:
            box.border_title = "vramscope · keys and controls"
            box.border_subtitle = "Esc closes"
            yield Static(_table("Keys", KEYS))
            yield Static(_table("Controls", CONTROLS), classes="help-section")
            yield Static(
                Text(
                    "Mouse: click or drag a slider, click an option or a model. "
                    "More in docs/tui.md.",
                    "dim",
                ),
                classes="help-section",
            )
