"""The Fits view's table: a header and thousands of rows, painted a line at a time.

Textual's DataTable measured and styled every cell of every row on each change
(1,560 rows: 0.2-0.7 s to fill, then 1.1-1.5 s for the next frame), and the view
changes with every batch of rows, every filter key and every sort. Here a change
is a list of cell tuples and the column widths (string lengths); a frame renders
only the lines in view. Line 0 is the header (it scrolls sideways with the rows,
never down); a click on it sorts, a click on a row moves the cursor there. Where the
width does not hold every column, the least important go (`tui.render.table_columns`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.render.table_columns import ShownColumn, TableColumn, cut, fit_columns

GAP = 2


class FitTableView(ScrollView, can_focus=True):
    """Rows of cells under a header; `cursor` is the highlighted row."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "fit-table--header",
        "fit-table--cursor",
        "fit-table--fits",
        "fit-table--no-fit",
    }

    DEFAULT_CSS = """
    FitTableView {
        height: 1fr;
        & > .fit-table--header { text-style: bold; background: $panel; }
        & > .fit-table--cursor { background: $primary-muted; }
        &:focus > .fit-table--cursor { background: $accent; color: $background; }
        & > .fit-table--fits { color: $success; text-style: bold; }
        & > .fit-table--no-fit { color: $error; text-style: bold; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "move_to(0)", "First", show=False),
        Binding("end", "move_to(-1)", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    class HeaderClicked(Message):
        """A click on a column's header."""

        def __init__(self, column: str) -> None:
            super().__init__()
            self.column = column

    class Selected(Message):
        """Enter on row `index` (of `table`: the Fits view holds two)."""

        def __init__(self, index: int, table: FitTableView | None = None) -> None:
            super().__init__()
            self.index = index
            self.table = table

    def __init__(
        self,
        columns: Sequence[TableColumn],
        verdict_column: str,
        *,
        id: str | None = None,  # noqa: A002
    ) -> None:
        super().__init__(id=id)
        self.specs = tuple(columns)
        self.columns = tuple(c.name for c in columns)
        self.labels = self.columns
        """The headers as shown (with the sort mark)."""
        self._verdict = self.columns.index(verdict_column)
        self.rows: list[tuple[str, ...]] = []
        """The cells of every row, top to bottom, in `columns` order (shown or not)."""
        self._fits: list[bool] = []
        self._widths = [len(c) for c in self.columns]
        """Each column's natural width: its widest cell or header."""
        self.shown: list[ShownColumn] = [ShownColumn(i, w) for i, w in enumerate(self._widths)]
        """The columns on screen, left to right, and the width each gets."""
        self._room = -1
        self.cursor = 0

    # --- what is shown --------------------------------------------------------------

    def show(
        self,
        rows: list[tuple[str, ...]],
        fits: list[bool],
        labels: Sequence[str],
        cursor: int = 0,
    ) -> None:
        """Show these rows (`fits[i]` colours row i's verdict) under these headers."""
        self.rows, self._fits, self.labels = rows, fits, tuple(labels)
        widths = [len(label) for label in self.labels]
        for row in rows:
            for i, cell in enumerate(row):
                if len(cell) > widths[i]:
                    widths[i] = len(cell)
        self._widths = widths
        self.cursor = max(0, min(cursor, len(rows) - 1))
        self._lay_out()
        self._keep_cursor_in_view()
        self.refresh()

    def _lay_out(self) -> None:
        """Pick the columns the width holds (again after a resize or new rows)."""
        self._room = room = self.scrollable_content_region.width
        self.shown = fit_columns(self.specs, self._widths, room, GAP)
        total = sum(c.width for c in self.shown) + GAP * (len(self.shown) - 1)
        self.virtual_size = Size(total, len(self.rows) + 1)

    @property
    def shown_columns(self) -> tuple[str, ...]:
        """The names of the columns on screen, left to right."""
        return tuple(self.columns[c.index] for c in self.shown)

    def _cells(self, cells: Sequence[str], style: Style, verdict: Style | None) -> list[Segment]:
        out: list[Segment] = []
        last = len(self.shown) - 1
        for n, column in enumerate(self.shown):
            i, width = column.index, column.width
            cell = cut(cells[i], width)
            text = cell.rjust(width) if self.specs[i].right else cell.ljust(width)
            out.append(Segment(text, verdict if verdict and i == self._verdict else style))
            if n < last:
                out.append(Segment(" " * GAP, style))
        return out

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if width != self._room:  # a scroll bar came or went: lay out again, next frame
            self._room = width
            self.call_later(self._relayout)
        scroll_x, scroll_y = self.scroll_offset
        base = self.rich_style
        if y == 0:
            header = base + self.get_component_rich_style("fit-table--header")
            segments = self._cells(self.labels, header, None)
            return (
                Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width, header)
            )
        index = scroll_y + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, base)
        style = base
        if index == self.cursor:
            style = base + self.get_component_rich_style("fit-table--cursor")
        verdict_class = "fit-table--fits" if self._fits[index] else "fit-table--no-fit"
        verdict = style + self.get_component_rich_style(verdict_class, partial=True)
        if index == self.cursor and self.has_focus:
            verdict = style
        segments = self._cells(self.rows[index], style, verdict)
        return Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width, style)

    # --- keys and the mouse -----------------------------------------------------------

    @property
    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 2)

    def _keep_cursor_in_view(self) -> None:
        rows_in_view = max(1, self.scrollable_content_region.height - 1)
        top = int(self.scroll_offset.y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + rows_in_view:
            self.scroll_to(y=self.cursor - rows_in_view + 1, animate=False)

    def _move_cursor(self, index: int) -> None:
        if not self.rows:
            return
        self.cursor = max(0, min(index, len(self.rows) - 1))
        self._keep_cursor_in_view()
        self.refresh()

    def action_move(self, step: int) -> None:
        """One row up or down."""
        self._move_cursor(self.cursor + step)

    def action_page(self, direction: int) -> None:
        """A page up or down."""
        self._move_cursor(self.cursor + direction * self._page)

    def action_move_to(self, index: int) -> None:
        """The first row, or (-1) the last."""
        self._move_cursor(index if index >= 0 else len(self.rows) - 1)

    def action_select(self) -> None:
        """Open the row under the cursor."""
        if self.rows:
            self.post_message(self.Selected(self.cursor, self))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        x, y = offset.x + int(self.scroll_offset.x), offset.y
        if y == 0:
            left = 0
            for column in self.shown:
                if left <= x < left + column.width + GAP:
                    self.post_message(self.HeaderClicked(self.columns[column.index]))
                    return
                left += column.width + GAP
            return
        self._move_cursor(int(self.scroll_offset.y) + y - 1)

    def _relayout(self) -> None:
        self._lay_out()
        self.refresh()

    def on_resize(self) -> None:
        self._lay_out()
        self._keep_cursor_in_view()
