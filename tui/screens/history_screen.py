"""`H`: every past measurement, newest first, and an export of the "Estimate against peak" table.

The explorer reads the history file in a background thread and hands the
result over (`show`); this screen reads nothing itself. Damaged lines were
skipped by the reader and are listed above the table. `e` (or Enter in the
path box) writes the table that `vramscope table` prints, for the runs listed.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from core.measurement.history import HistoryRead
from core.measurement.result import MeasuredPeak
from tui.render.history_table import (
    COLUMNS,
    EXPORT_FILE,
    NUMERIC,
    display_path,
    history_row,
    newest_first,
    unmeasured_row,
    write_export,
)

EMPTY = "No measurements yet: press m on the main screen to measure the model on screen."
NOT_KEPT = "No history file in this session: measurements are not recorded."


class HistoryScreen(Screen[None]):
    """The history table, its warnings, and the export path."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,H", "close", "Close"),
        Binding("e", "export", "Export table"),
    ]

    def __init__(
        self, read: HistoryRead, path: Path | None, export_path: Path | None = None
    ) -> None:
        super().__init__()
        self._read = read
        self._path = path
        self._export_path = export_path or Path(EXPORT_FILE)
        self.records: list[MeasuredPeak] = []
        """The runs listed, newest first (what the export writes)."""
        self.exported: Path | None = None
        """The file the last export wrote."""
        self._columns = False

    def compose(self) -> ComposeResult:
        with Vertical(id="history"):
            yield Static("", id="history-warnings", markup=False)
            table: DataTable[str | Text] = DataTable(
                id="history-table", cursor_type="row", zebra_stripes=True
            )
            yield table
            yield Static("", id="history-empty", markup=False)
            with Horizontal(id="history-export"):
                yield Static("Export to ", id="export-label")
                yield Input(str(self._export_path), id="export-path")
            yield Static("", id="history-status", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        self._columns = True
        self.show(self._read, self._path)
        table.focus()

    def show(self, read: HistoryRead, path: Path | None) -> None:
        """List these records (newest first) and the lines that were skipped."""
        self._read, self._path = read, path
        if not self._columns:
            return  # on_mount shows what was handed over last
        box = self.query_one("#history", Vertical)
        count = len(read.results) + len(read.unmeasured)
        box.border_title = f"Measurement history · {count} run(s)"
        shown = display_path(path) if path is not None else ""
        box.border_subtitle = shown or "not recorded"
        lines = [f"⚠ {w.replace(str(path), shown) if shown else w}" for w in read.warnings]
        warnings = self.query_one("#history-warnings", Static)
        warnings.display = bool(lines)
        warnings.update(Text("\n".join(lines), "yellow"))
        self.records = newest_first(read.results)
        table = self.query_one(DataTable)
        table.clear()
        # Runs recorded "not measured" (no peak) listed too, by time; never exported.
        listed = [(p.timestamp, history_row(p)) for p in self.records]
        if read.unmeasured:  # two lists: merged by their ISO times, newest first
            listed += [(u.timestamp, unmeasured_row(u)) for u in read.unmeasured]
            listed.sort(key=lambda item: item[0], reverse=True)
        for _, row in listed:
            cells: list[str | Text] = [
                Text(cell, justify="right") if name in NUMERIC else cell
                for name, cell in zip(COLUMNS, row.cells, strict=True)
            ]
            if row.covered is not None:
                cells[-1] = Text(row.cells[-1], "bold green" if row.covered else "bold red")
            table.add_row(*cells)
        empty = self.query_one("#history-empty", Static)
        empty.display = not listed
        empty.update(EMPTY if path is not None else NOT_KEPT)

    def action_close(self) -> None:
        """Back to the explorer."""
        self.dismiss()

    @on(Input.Submitted, "#export-path")
    def _submitted(self) -> None:
        self.action_export()

    def action_export(self) -> None:
        """Write the "Estimate against peak" table of the runs listed to the path in the box.

        A small local write, done in place; a path that cannot be written is
        reported on the status line and changes nothing else.
        """
        status = self.query_one("#history-status", Static)
        if not self.records:
            status.update(Text("Nothing to export yet.", "yellow"))
            return
        raw = self.query_one("#export-path", Input).value.strip() or EXPORT_FILE
        try:
            written = write_export(self.records, Path(raw))
        except (OSError, ValueError, RuntimeError) as exc:  # a bad path is a message, not a crash
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            status.update(Text(f"Cannot write {raw}: {reason}", "bold red"))
            return
        self.exported = written
        status.update(Text(f"Wrote {len(self.records)} run(s) to {written}", "green"))
        self.notify(str(written), title="Estimate against peak table written", timeout=6)
