"""The total against context (log scale) at the current settings, with the available line
and the measured peaks of the model on screen.

The widget samples one context per column of its own width and asks the
screen's estimator for the totals, so the curve is the real `estimate()` at
every column and costs a few hundred microseconds per frame.

A token key moves only the marked column (and the `▲` under it). The bar rows are
drawn twice and kept while the totals stay: every column plain, and every column
in the marked style (`render_chart` with the marked style for both fits and over).
A key then takes the marked column's cells from the second and the rest from the
first: the same cells `render_chart` draws for that column, for a tenth of its cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from tui.model.chart_data import ChartData
from tui.model.scales import MIN_TOKENS
from tui.render.chart import (
    LABEL_WIDTH,
    ChartStyles,
    nearest_column,
    point_columns,
    render_chart,
    sample_contexts,
    tick_line,
)
from tui.widgets.repaint import KeptStyles, SeenLines


class ContextChart(SeenLines):
    """Columns of the total from 256 tokens to the model's trained context."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "context-chart--fits",
        "context-chart--over",
        "context-chart--current",
        "context-chart--available",
        "context-chart--axis",
        "context-chart--measured",
    }

    DEFAULT_CSS = """
    ContextChart {
        height: 12;
        & > .context-chart--fits { color: $success; }
        & > .context-chart--over { color: $error; }
        & > .context-chart--current { color: $accent; text-style: bold; }
        & > .context-chart--available { color: $warning; }
        & > .context-chart--axis { color: $text-muted; }
        & > .context-chart--measured { color: magenta; text-style: bold; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.data: ChartData | None = None
        self._totals: tuple[object, list[int]] = (None, [])
        self._strips: list[Strip] | None = None
        self._rows: tuple[object, list[Strip], list[Strip]] | None = None
        """The bar rows and the axis, every column plain and every column marked, by
        what they depend on (`_marked_rows`)."""
        self._kept = KeptStyles(self)
        self.titles: tuple[str, str] = ("", "")
        """The border's title and subtitle: on the border once the chart is in view."""
        self._titles_drawn: tuple[str, str] | None = None

    def notify_style_update(self) -> None:
        self._kept.clear()
        self._strips = self._rows = None  # they carry the old styles
        super().notify_style_update()

    def show(self, data: ChartData | None, title: str = "", subtitle: str = "") -> None:
        """Plot new data (None clears the chart) under a new title and subtitle; drawn
        now if the chart is in view, else when it comes into view."""
        self.data = data
        self.titles = (title, subtitle)
        self._strips = None
        self.repaint()

    def when_seen(self) -> None:
        if self._titles_drawn != self.titles:  # each set of a title repaints the widget
            self._titles_drawn = self.titles
            self.border_title, self.border_subtitle = self.titles

    def on_resize(self) -> None:
        # Any size change redraws the whole chart (range, columns, labels), not just its edge.
        self._strips = self._rows = None
        self.refresh()

    def render_line(self, y: int) -> Strip:
        # The Line API: segments straight from the chart text, no Rich-to-Content
        # conversion on every frame (that conversion cost more than the chart itself).
        base = self._kept.base()
        if self._strips is None:
            self._strips = self._draw(base)
        width = self.size.width
        if y < len(self._strips):
            return self._strips[y].adjust_cell_length(width, base)
        return Strip.blank(width, base)

    def _draw(self, base: Style) -> list[Strip]:
        data = self.data
        columns = self.size.width - LABEL_WIDTH - 2
        rows = self.size.height - 2
        if data is None or columns < 8 or rows < 2:
            text = Text().append("no estimate to plot", "dim") if data is None else Text("")
            return self._strips_of(text, base)
        top = max(data.top_tokens, data.current_tokens, MIN_TOKENS + 1)
        contexts = sample_contexts(MIN_TOKENS, top, columns)
        styles = self._styles()
        current = nearest_column(contexts, data.current_tokens)
        cache_key = (data.key, top, columns)
        if data.key is None or self._totals[0] != cache_key:
            self._totals = (cache_key, data.totals(contexts))
        totals = self._totals[1]
        points = point_columns(contexts, data.points)
        if data.key is None:  # totals not kept: nothing to keep the rows by either
            chart = render_chart(contexts, totals, data.available, current, rows, styles, points)
            return self._strips_of(chart, base)
        plain, marked = self._marked_rows(
            (cache_key, data.available, rows, points),
            lambda lit: render_chart(contexts, totals, data.available, -1, rows, lit, points),
            styles,
            base,
        )
        x = LABEL_WIDTH + 1 + current  # the label, the axis' tick, then the columns
        strips = [
            Strip.join([p.crop(0, x), m.crop(x, x + 1), p.crop(x + 1)]).simplify()
            for p, m in zip(plain[:rows], marked[:rows], strict=True)
        ]
        strips.append(plain[rows])  # the axis line: no marked column
        strips.extend(self._strips_of(tick_line(contexts, current, styles), base))
        return strips

    def _marked_rows(
        self,
        key: object,
        draw: Callable[[ChartStyles], Text],
        styles: ChartStyles,
        base: Style,
    ) -> tuple[list[Strip], list[Strip]]:
        """The chart's rows with no column marked and with every column marked (the
        marked style for fits and over alike), kept while `key` stays."""
        if self._rows is None or self._rows[0] != key:
            lit = replace(styles, fits=styles.current, over=styles.current)
            self._rows = (
                key,
                self._strips_of(draw(styles), base),
                self._strips_of(draw(lit), base),
            )
        return self._rows[1], self._rows[2]

    def _strips_of(self, text: Text, base: Style) -> list[Strip]:
        console = self.app.console
        return [Strip(line.render(console)).apply_style(base) for line in text.split("\n")]

    def _styles(self) -> ChartStyles:
        kept = self._kept.component
        return ChartStyles(
            fits=kept("context-chart--fits"),
            over=kept("context-chart--over"),
            current=kept("context-chart--current"),
            available=kept("context-chart--available"),
            axis=kept("context-chart--axis"),
            measured=kept("context-chart--measured"),
        )
