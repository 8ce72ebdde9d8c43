"""`h` in the Fits view: its Hub scope, `vramscope fit --hub` for the settings on screen.

Type a query (`qwen author:mlx-community library:mlx sort:likes limit:20`) and Enter:
`tui.controllers.hub_fit_rows` lists on a worker and every repo gets a `≈` row at
once (the listing's weights bound), each turning exact as its headers arrive. `s`
steps the sort through every column, `S` reverses, a header click sorts by it. Enter
on an exact row opens that model at that quantization in the explorer, as a local
row does; Esc goes back to the local rows.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static

from core.fit.hub import HubFitRow
from tui.controllers.hub_fit_rows import HubFitController
from tui.messages import FitPick, HubRowsRead
from tui.render.fit_table import fit_heading
from tui.render.hub_fit_table import (
    HUB_COLUMNS,
    HUB_SORTS,
    HUB_TABLE_COLUMNS,
    hub_cells,
    hub_sorted,
)
from tui.widgets.fit_table_view import FitTableView
from tui.widgets.key_footer import KeyFooter

REPAINT_S = 0.2
"""Rows arriving after the first are painted at most this often."""


class HubFitsScreen(Screen[FitPick | None]):
    """The Hub's rows for a query, ranked, bounds turning exact."""

    DEFAULT_CSS = """
    HubFitsScreen {
        & #hub-fits {
            height: 1fr;
            border: round $primary 40%;
            border-title-color: $text;
            border-subtitle-color: $text-muted;
            padding: 0 1;
        }
        & #hub-fits-heading { height: auto; }
        & #hub-query { height: 1; border: none; padding: 0; margin: 1 0 0 0; }
        & #hub-fits-table { height: 1fr; }
        & #hub-fits-status { height: auto; }
    }
    """

    AUTO_FOCUS = "#hub-query"
    """The query box from the first key after `h` (a burst's next keys land there)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Local rows"),
        Binding("slash", "query", "Query", priority=True),  # a burst lands in the box
        Binding("s", "sort_next", "Sort"),
        Binding("S", "sort_reverse", "Reverse"),
    ]

    def __init__(self, inputs: Any, timeout_s: float | None = None) -> None:
        super().__init__()
        self.inputs = inputs
        self.hub = (
            HubFitController(self) if timeout_s is None else HubFitController(self, timeout_s)
        )
        self.rows: dict[str, list[HubFitRow]] = {}
        self.shown: list[HubFitRow] = []
        self.status = "type a query and Enter: words, author:ORG, library:mlx, sort:likes, limit:N"
        self.done = False
        self.sort: str = "RANK"
        """The column the rows are sorted by (a heading of `hub_table`, or RANK)."""
        self.descending = False
        self._query = 0
        self._repaint: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="hub-fits"):
            heading = "\n".join(fit_heading(self.inputs.question))
            yield Static(Text(heading), id="hub-fits-heading", markup=False)
            yield Input(
                placeholder="Hub query: words author:ORG library:mlx sort:likes limit:N",
                id="hub-query",
                compact=True,
            )
            yield FitTableView(HUB_TABLE_COLUMNS, "VERDICT", id="hub-fits-table")
            yield Static("", id="hub-fits-status", markup=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        box = self.query_one("#hub-fits", Vertical)
        box.border_title = "What fits · the Hub (vramscope fit --hub)"
        box.border_subtitle = "≈: the listing's weights bound, until the headers are read"
        self._paint()

    def on_unmount(self) -> None:
        self.hub.stop()

    @property
    def _available(self) -> int:
        return int(self.inputs.question.device.available.bytes)

    # --- rows ----------------------------------------------------------------------

    @on(Input.Submitted, "#hub-query")
    def _submitted(self, event: Input.Submitted) -> None:
        self.rows = {}
        self.done = False
        self.status = "listing…"
        self._query = self.hub.start(event.value, self.inputs.question)
        self._paint()
        self.set_focus(self.query_one(FitTableView))

    def on_hub_rows_read(self, message: HubRowsRead) -> None:
        if message.query != self._query:
            return  # an older query's
        got: dict[str, list[HubFitRow]] = {}
        for row in message.rows:
            if isinstance(row, HubFitRow):
                got.setdefault(row.listed.repo_id, []).append(row)
        self.rows.update(got)
        self.status = message.status
        self.done = message.done
        if not self.shown or self.done:
            self._paint()
        elif self._repaint is None:
            self._repaint = self.set_timer(REPAINT_S, self._paint)

    def _paint(self) -> None:
        if self._repaint is not None:
            self._repaint.stop()
            self._repaint = None
        table = self.query_one(FitTableView)
        current = self.shown[table.cursor] if 0 < table.cursor < len(self.shown) else None
        flat = [r for group in self.rows.values() for r in group]
        self.shown = hub_sorted(flat, self.sort, self.descending)
        labels = [
            name + ((" ▼" if self.descending else " ▲") if name == self.sort else "")
            for name in HUB_COLUMNS
        ]
        keys = [(r.listed.repo_id, r.quantization) for r in self.shown]
        at = keys.index((current.listed.repo_id, current.quantization)) if current else 0
        available = self._available
        table.show(
            [hub_cells(r, available) for r in self.shown],
            [bool(r.exact and r.row is not None and r.row.ranked_fits) for r in self.shown],
            labels,
            at if current is not None and (current.listed.repo_id, current.quantization) in keys
            else 0,
        )  # fmt: skip
        exact = sum(1 for r in self.shown if r.exact)
        words = [
            self.status,
            f"{exact} exact, {len(self.shown) - exact} ≈ rows",
            "ranked as vramscope fit" if self.sort == "RANK" else f"by {self.sort}",
        ]
        style = "bold" if self.done or not self.rows else "yellow"
        self.query_one("#hub-fits-status", Static).update(Text(" · ".join(words), style))

    # --- keys ----------------------------------------------------------------------

    @on(FitTableView.HeaderClicked)
    def _header(self, event: FitTableView.HeaderClicked) -> None:
        column = event.column
        self.descending = not self.descending if column == self.sort else False
        self.sort = column
        self._paint()

    @on(FitTableView.Selected)
    def _picked(self, event: FitTableView.Selected) -> None:
        if not 0 <= event.index < len(self.shown):
            return
        row = self.shown[event.index]
        if row.exact and row.entry is not None and row.row is not None:
            self.dismiss(FitPick(row.entry, row.row, hub_cells(row, self._available)))
        else:
            why = row.problem or "its headers are not read yet"
            self.notify(f"{row.listed.repo_id}: {why}", severity="warning")

    def action_close(self) -> None:
        """Back to the local rows, nothing picked."""
        self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # `/` is a priority binding, so the keys after it in a burst land in the box; in
        # the box itself it is a letter (repo ids have one).
        return not (action == "query" and isinstance(self.focused, Input))

    def action_query(self) -> None:
        """Focus the query box."""
        self.set_focus(self.query_one("#hub-query", Input))

    def action_sort_next(self) -> None:
        """Sort by the next column (after the last: fit's ranking again)."""
        self.sort = HUB_SORTS[(HUB_SORTS.index(self.sort) + 1) % len(HUB_SORTS)]
        self.descending = False
        self._paint()

    def action_sort_reverse(self) -> None:
        """Reverse the order on screen."""
        self.descending = not self.descending
        self._paint()
