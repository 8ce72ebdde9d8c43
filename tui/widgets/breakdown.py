"""The estimate, term by term: size, exact bytes, a bar against available memory, and the note.

It shows one of three things in the same place: the breakdown, a "reading"
line while a model loads in a worker, or the error that stopped a model from
loading. The columns line up whatever the values (the bytes column is as wide
as its widest number) and the notes are the banner's own words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich import box
from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widget import Widget

from core.units import format_bytes_short
from tui.bars import bar, stacked_bar
from tui.breakdown_rows import TERM_KEYS, BreakdownRow, Verdict

# Rules under the header and above the total; no other lines.
_RULES = box.Box("    \n    \n ── \n    \n ── \n    \n    \n    \n")

WIDE = 110
"""At this width and above, notes wrap instead of being cut short."""


@dataclass(frozen=True)
class EstimateView:
    """Everything the breakdown shows for one estimate."""

    rows: tuple[BreakdownRow, ...]
    verdict: Verdict
    context_limit: str
    inflight_limit: str
    warnings: tuple[str, ...] = ()


class Breakdown(Widget):
    """The breakdown table, or a loading line, or an error, in place."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "breakdown--weights",
        "breakdown--kv",
        "breakdown--activation",
        "breakdown--overhead",
        "breakdown--inflight",
        "breakdown--available",
        "breakdown--fits",
        "breakdown--over",
        "breakdown--warning",
        "breakdown--error",
        "breakdown--muted",
    }

    DEFAULT_CSS = """
    Breakdown {
        height: auto;
        & > .breakdown--weights { color: $primary; }
        & > .breakdown--kv { color: $secondary; }
        & > .breakdown--activation { color: $success-darken-1; }
        & > .breakdown--overhead { color: $warning-darken-2; }
        & > .breakdown--inflight { color: $error-lighten-1; }
        & > .breakdown--available { color: $foreground 25%; }
        & > .breakdown--fits { background: $success; color: $background; text-style: bold; }
        & > .breakdown--over { background: $error; color: $background; text-style: bold; }
        & > .breakdown--warning { color: $warning; }
        & > .breakdown--error { color: $error; text-style: bold; }
        & > .breakdown--muted { color: $text-muted; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._view: EstimateView | None = None
        self._message: tuple[str, str, tuple[str, ...]] | None = ("loading", "Starting…", ())

    @property
    def view(self) -> EstimateView | None:
        """The estimate on screen, or None while loading or after an error."""
        return self._view if self._message is None else None

    def show_estimate(self, view: EstimateView) -> None:
        """Show an estimate."""
        self._view, self._message = view, None
        self.refresh(layout=True)

    def show_loading(self, text: str) -> None:
        """Show a loading line in place of the table."""
        self._message = ("loading", text, ())
        self.refresh(layout=True)

    def show_error(self, text: str, warnings: tuple[str, ...] = ()) -> None:
        """Show why a model could not be read, in place of the table."""
        self._message = ("error", text, warnings)
        self.refresh(layout=True)

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"breakdown--{name}")

    def render(self) -> RenderableType:
        if self._message is not None:
            kind, text, warnings = self._message
            parts: list[RenderableType] = []
            if kind == "error":
                parts.append(Text("Cannot read this model", self._style("error")))
                parts.append(Text(text))
                parts.append(Text(""))
                parts.append(
                    Text(
                        "The controls still work; pick another model from the list.",
                        self._style("muted"),
                    )
                )
            else:
                parts.append(Text(text, self._style("muted")))
            parts += [Text(f"⚠ {w}", self._style("warning")) for w in warnings]
            return Group(*parts)
        assert self._view is not None
        return self._render_view(self._view)

    def _render_view(self, view: EstimateView) -> RenderableType:
        width = self.content_region.width or self.size.width or 80
        wide = width >= WIDE
        available = next(r.bytes for r in view.rows if r.key == "available")
        # Minimum widths keep the columns still while rows come and go.
        label_w = max(17, *(len(r.label) for r in view.rows))
        size_w = max(9, *(len(format_bytes_short(r.bytes)) for r in view.rows))
        bytes_w = max(11, *(len(str(r.bytes)) for r in view.rows))
        room = max(0, width - label_w - size_w - bytes_w - 8)  # 4 two-space column gaps
        bar_width = max(6, min(20, room // 4))
        note_w = max(1, room - bar_width)
        table = Table(
            box=_RULES,
            show_header=wide,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1, 0, 0),
            header_style=self._style("muted"),
            expand=False,
        )
        table.add_column("Term", no_wrap=True, width=label_w)
        table.add_column("Size", justify="right", no_wrap=True, width=size_w)
        table.add_column("Bytes", justify="right", no_wrap=True, width=bytes_w)
        table.add_column("Share of available", no_wrap=True, width=bar_width)
        table.add_column(
            "Source", no_wrap=not wide, overflow="fold" if wide else "ellipsis", width=note_w
        )
        parts: list[tuple[int, Style]] = []
        for row in view.rows:
            if row.key in TERM_KEYS:
                style = self._style(row.key)
                parts.append((row.bytes, style))
                cells = self._cells(row, bar(row.bytes, available, bar_width, style))
                table.add_row(*cells)
                if row.subnote:
                    table.add_row("", "", "", "", Text(row.subnote, self._style("muted")))
            elif row.key == "total":
                table.add_section()
                over = self._style("over") if available else Style()
                total_bar = stacked_bar(parts, available, bar_width, over)
                table.add_row(*self._cells(row, total_bar), style=Style(bold=True))
            else:
                avail_bar = Text("━" * bar_width, self._style("available"))
                table.add_row(*self._cells(row, avail_bar))
        out: list[RenderableType] = [Text(f"⚠ {w}", self._style("warning")) for w in view.warnings]
        out.append(table)
        verdict = Text()
        badge = "fits" if view.verdict.fits else "over"
        verdict.append(f" {view.verdict.label} ", self._style(badge))
        verdict.append(f"  {view.verdict.text}")
        out.append(verdict)
        limits = Text()
        limits.append("Largest context that fits    ", self._style("muted"))
        limits.append(view.context_limit)
        limits.append("\nLargest in-flight that fits  ", self._style("muted"))
        limits.append(view.inflight_limit)
        out.append(limits)
        return Group(*out)

    def _cells(self, row: BreakdownRow, row_bar: Text) -> tuple[str, str, str, Text, Text]:
        return (
            row.label,
            format_bytes_short(row.bytes),
            str(row.bytes),
            row_bar,
            Text(row.note, self._style("muted")),
        )
