"""The split-load panel: one column per rank, the plan's verdict and largest context.

Hidden with one device. With 2-8 devices it sits under the single-device
breakdown, which stays mlxcel's estimate of the whole model on one device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:  # core.parallel.plan is imported with the first split, not at start-up
    from tui.model.parallel_view import ParallelView


class RanksPanel(Static):
    """Per-rank terms side by side (or why the split cannot run)."""

    DEFAULT_CSS = """
    RanksPanel {
        height: auto;
        display: none;
        border-top: solid $primary 40%;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__("", id=id, markup=False)

    def hide(self) -> None:
        """One device: nothing to show."""
        self.display = False

    def show_problem(self, title: str, message: str) -> None:
        """A split mlx-lm could not run, in one line."""
        self.display = True
        self.border_title = title
        self.update(Text(message, style="bold red"))

    def show_view(self, title: str, view: ParallelView) -> None:
        """The table and the verdict line."""
        self.display = True
        self.border_title = title
        table = Table(box=None, padding=(0, 2, 0, 0), show_edge=False, pad_edge=False)
        table.add_column("", style="bold")
        for rank in view.answer.ranks:
            table.add_column(f"Rank {rank.rank}", justify="right")
        for term, cells in view.rows:
            style = None
            if term == "Verdict":
                fits = view.rank_fits
                table.add_row(
                    term,
                    *(
                        Text(c, style="bold green" if fit else "bold red")
                        for c, fit in zip(cells, fits, strict=True)
                    ),
                )
                continue
            table.add_row(term, *cells, style=style)
        line = Text()
        line.append(view.verdict, style="bold green" if view.fits else "bold red")
        line.append(f" · {view.largest_context}")
        from rich.console import Group

        self.update(Group(line, table))
