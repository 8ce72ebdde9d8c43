"""`f`: what fits on the device on screen, `vramscope fit`'s table for the explorer's settings.

The rows come from `tui.controllers.fit_rows` on a thread worker and are painted as
they arrive, in `vramscope fit`'s order unless a column is chosen: `s` steps the sort
through the columns, `S` reverses it, a click on a header sorts by that column (again:
reversed). The filter keeps the rows whose model, quantization or source holds every
word typed. Enter closes the view with the row (the explorer then opens that model
and quantization); Esc or `f` closes it with nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static

from core.answer.fit import WHAT_IF_FORMULA
from core.answer.question import Question
from core.catalog.entry import Catalog
from tui.controllers.fit_rows import FitRowsController
from tui.deps import AppDeps
from tui.messages import FitPick, FitRowsRead, GgufPick, GgufRowsRead
from tui.render.fit_table import (
    COLUMNS,
    FIT_COLUMNS,
    LOAD_NOTE,
    RANK,
    SORTS,
    faults_and_skips,
    fit_heading,
    matches,
    sorted_rows,
)
from tui.render.gguf_fit_table import COLUMNS as COLUMNS_GGUF
from tui.render.gguf_fit_table import GGUF_COLUMNS, gguf_heading
from tui.widgets.fit_table_view import FitTableView
from tui.widgets.key_footer import KeyFooter

if TYPE_CHECKING:
    from core.gguf_load.fit import GgufAsk

GGUF_ROWS_SHOWN = 12
"""The GGUF table's most lines on screen (more scroll); the main table keeps the rest."""
REPAINT_S = 0.25
"""Rows arriving after the first are painted at most this often."""

WHAT_IF_NOTE = (
    f"* {WHAT_IF_FORMULA}: the weights mlx_lm.convert -q would write, not an mlxcel "
    "figure; stored rows are mlxcel's estimate, as vramscope inspect"
)


@dataclass(frozen=True)
class FitsInputs:
    """What the view computes for: the explorer's settings and the command that agrees."""

    question: Question
    """The explorer's question (its device, workload and knobs), asked of every model."""
    command: str
    """`vramscope fit ...` with the same settings (it prints the same rows)."""
    gguf: GgufAsk | None = None
    """llama.cpp's question for the GGUF rows (the explorer's llama.cpp controls and
    tokens); None: no GGUF rows."""


class FitsScreen(Screen[FitPick | GgufPick | None]):
    """The ranked (model, quantization) table, its filter and its sort; under it, when
    GGUF files are found, `fit`'s GGUF table (one row per quant file)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back"),
        Binding("f", "close", "Back", show=False),
        Binding("slash", "filter", "Filter", priority=True),  # a burst lands in the box
        Binding("s", "sort_next", "Sort"),
        Binding("S", "sort_reverse", "Reverse"),
        Binding("down", "to_table", show=False),
        # Priority: the keys of a burst after `h` land in the Hub scope's query box.
        Binding("h", "hub", "Hub scope", priority=True),
    ]

    def __init__(self, deps: AppDeps, inputs: FitsInputs, catalog: Catalog | None) -> None:
        super().__init__()
        self.inputs = inputs
        self._catalog = catalog
        self.rows = FitRowsController(self, deps)
        self.picks: list[FitPick] = []
        """Every row computed so far (with numbers or not), in arrival order."""
        self.skipped: list[str] = []
        self.done = False
        self.sort = RANK
        self.descending = False
        self.shown: list[FitPick] = []
        """The rows on screen, top to bottom."""
        self.gguf: tuple[GgufPick, ...] = ()
        """The GGUF rows, ranked as `fit` ranks them."""
        self._repaint: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="fits"):
            yield Static(self._heading(), id="fits-heading", markup=False)
            yield Input(
                placeholder="filter: words in the model, quantization or source",
                id="fits-filter",
                compact=True,
            )
            yield FitTableView(FIT_COLUMNS, "VERDICT", id="fits-table")
            # Shown once GGUF files answer (`fit`'s GGUF table): none, none on screen.
            gguf_heading = Static("", id="fits-gguf-heading", markup=False)
            gguf_heading.display = False
            yield gguf_heading
            gguf = FitTableView(GGUF_COLUMNS, "VERDICT", id="fits-gguf")
            gguf.display = False
            yield gguf
            yield Static("", id="fits-status", markup=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        box = self.query_one("#fits", Vertical)
        box.border_title = "What fits · vramscope fit for the settings on screen"
        box.border_subtitle = self.inputs.command
        self._paint()
        self.query_one(FitTableView).focus()
        self.rows.start(self._catalog, self.inputs.question, self.inputs.gguf)

    def on_unmount(self) -> None:
        self.rows.stop()

    def _heading(self) -> Text:
        return Text("\n".join(fit_heading(self.inputs.question)))

    # --- rows ----------------------------------------------------------------------

    def on_fit_rows_read(self, message: FitRowsRead) -> None:
        self.picks.extend(message.picks)
        self.skipped.extend(message.skipped)
        self.done = self.done or message.done
        # The first rows and the last are painted at once; in between at most every
        # REPAINT_S: each repaint holds the interpreter, and the worker needs it too.
        if not self.shown or self.done:
            self._paint()
        elif self._repaint is None:
            self._repaint = self.set_timer(REPAINT_S, self._paint)

    def on_gguf_rows_read(self, message: GgufRowsRead) -> None:
        from core.gguf_load.fit import GgufAsk

        self.gguf = message.picks
        ask = self.inputs.gguf
        assert isinstance(ask, GgufAsk)  # the rows answer the view's question
        heading = self.query_one("#fits-gguf-heading", Static)
        heading.update(gguf_heading(ask))
        table = self.query_one("#fits-gguf", FitTableView)
        table.show(
            [p.cells for p in self.gguf],
            [p.row.answer is not None and bool(p.row.answer.fits) for p in self.gguf],
            COLUMNS_GGUF,
        )
        table.styles.height = min(len(self.gguf) + 1, GGUF_ROWS_SHOWN)  # the header too
        heading.display = table.display = True

    def _visible(self) -> list[FitPick]:
        text = self.query_one("#fits-filter", Input).value
        by_row = {id(p.row): p for p in self.picks if p.row.unavailable is None}
        rows = [p.row for p in by_row.values() if matches(p.row, text)]
        return [by_row[id(r)] for r in sorted_rows(rows, self.sort, self.descending)]

    def _paint(self) -> None:
        if self._repaint is not None:
            self._repaint.stop()
            self._repaint = None
        table = self.query_one(FitTableView)
        # The cursor follows its row as rows arrive, once moved; at the top it stays there.
        moved = 0 < table.cursor < len(self.shown)
        current = self.shown[table.cursor] if moved else None
        self.shown = self._visible()
        labels = [
            name + ((" ▼" if self.descending else " ▲") if name == self.sort else "")
            for name in COLUMNS
        ]
        cursor = self.shown.index(current) if current is not None and current in self.shown else 0
        table.show(
            [p.cells for p in self.shown],
            [bool(p.row.ranked_fits) for p in self.shown],
            labels,
            cursor,
        )
        self.query_one("#fits-status", Static).update(self._status())

    def _status(self) -> Text:
        ranked = [p.row for p in self.picks if p.row.unavailable is None]
        missing = len(self.picks) - len(ranked)
        fitting = sum(1 for r in ranked if r.ranked_fits and not r.past_trained)
        past = sum(1 for r in ranked if r.ranked_fits and r.past_trained)
        order = "vramscope fit's ranking" if self.sort == RANK else f"by {self.sort}"
        words = [
            f"{fitting} of {len(ranked)} rows fit"
            + (f" ({past} more past the trained context)" if past else "")
            if self.done
            else f"computing… {len(ranked)} rows so far",
            f"{len(self.shown)} shown",
            order + (", reversed" if self.descending else ""),
        ]
        refused = sum(1 for r in ranked if r.load_fits and r.fits is False)
        if refused:
            rows = f"{refused} row{'s' if refused != 1 else ''}"
            words.append(f"{rows} mlxcel's preflight would refuse (mlx-lm loads)")
        if missing:
            words.append(f"{missing} what-ifs not computed (vramscope fit lists why)")
        counts = faults_and_skips([p.row for p in self.picks], self.skipped)
        if counts:
            first = f" (first: {self.skipped[0]})" if self.skipped else ""
            words.append(counts + first + "; vramscope fit lists why")
        text = Text(" · ".join(words), "bold" if self.done else "yellow")
        text.append("\n" + WHAT_IF_NOTE, "dim")
        if any(p.row.load is not None for p in self.picks):
            text.append("\n" + LOAD_NOTE, "dim")
        return text

    # --- keys ----------------------------------------------------------------------

    @on(Input.Changed, "#fits-filter")
    def _filtered(self) -> None:
        self._paint()

    @on(Input.Submitted, "#fits-filter")
    def _filter_done(self) -> None:
        self.action_to_table()

    @on(FitTableView.HeaderClicked)
    def _header(self, event: FitTableView.HeaderClicked) -> None:
        column = event.column
        self.descending = not self.descending if column == self.sort else False
        self.sort = column
        self._paint()

    @on(FitTableView.Selected)
    def _picked(self, event: FitTableView.Selected) -> None:
        if event.table is not None and event.table.id == "fits-gguf":
            if 0 <= event.index < len(self.gguf) and self.gguf[event.index].row.answer:
                self.dismiss(self.gguf[event.index])
        elif 0 <= event.index < len(self.shown):
            self.dismiss(self.shown[event.index])

    def action_hub(self) -> None:
        """The Hub scope (`tui.screens.hub_fits_screen`): a pick there is a pick here."""
        from tui.screens.hub_fits_screen import HubFitsScreen

        def picked(pick: FitPick | None) -> None:
            if pick is not None:
                self.dismiss(pick)

        self.app.push_screen(HubFitsScreen(self.inputs), picked)

    def action_close(self) -> None:
        """Back to the explorer, nothing picked."""
        self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # `/` and `h` are priority bindings, so the keys after them in a burst land where
        # they lead; in the filter they are letters (repo ids have both), and Textual then
        # hands the key to the box.
        return not (action in ("filter", "hub") and isinstance(self.focused, Input))

    def action_filter(self) -> None:
        """Focus the filter."""
        self.set_focus(self.query_one("#fits-filter", Input))

    def action_to_table(self) -> None:
        """Focus the table."""
        self.set_focus(self.query_one(FitTableView))

    def action_sort_next(self) -> None:
        """Sort by the next column (after the last: `vramscope fit`'s ranking again)."""
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.descending = False
        self._paint()

    def action_sort_reverse(self) -> None:
        """Reverse the order on screen."""
        self.descending = not self.descending
        self._paint()
