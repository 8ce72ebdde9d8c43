"""The total against context (log scale) at the current settings, with the available line
and the measured peaks of the model on screen.

The widget samples one context per column of its own width and asks the
screen's estimator for the totals, so the curve is the real `estimate()` at
every column and costs a few hundred microseconds per frame.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget

from tui.model.chart_data import ChartData
from tui.model.scales import MIN_TOKENS
from tui.render.chart import (
    LABEL_WIDTH,
    ChartStyles,
    nearest_column,
    point_columns,
    render_chart,
    sample_contexts,
)
from tui.widgets.repaint import KeptStyles


class ContextChart(Widget):
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
        self._kept = KeptStyles(self)

    def notify_style_update(self) -> None:
        self._kept.clear()
        self._strips = None  # they carry the old styles
        super().notify_style_update()

    def show(self, data: ChartData | None) -> None:
        """Plot new data (None clears the chart)."""
        self.data = data
        self._strips = None
        self.refresh()

    def on_resize(self) -> None:
        # Any size change redraws the whole chart (range, columns, labels), not just its edge.
        self._strips = None
        self.refresh()

    def render_line(self, y: int) -> Strip:
        # The Line API: segments straight from the chart text, no Rich-to-Content
        # conversion on every frame (that conversion cost more than the chart itself).
        base = self._kept.base()
        if self._strips is None:
            console = self.app.console
            self._strips = [
                Strip(line.render(console)).apply_style(base) for line in self._chart().split("\n")
            ]
        width = self.size.width
        if y < len(self._strips):
            return self._strips[y].adjust_cell_length(width, base)
        return Strip.blank(width, base)

    def _chart(self) -> Text:
        data = self.data
        columns = self.size.width - LABEL_WIDTH - 2
        rows = self.size.height - 2
        if data is None or columns < 8 or rows < 2:
            return Text().append("no estimate to plot", "dim") if data is None else Text("")
        top = max(data.top_tokens, data.current_tokens, MIN_TOKENS + 1)
        contexts = sample_contexts(MIN_TOKENS, top, columns)
        kept = self._kept.component
        styles = ChartStyles(
            fits=kept("context-chart--fits"),
            over=kept("context-chart--over"),
            current=kept("context-chart--current"),
            available=kept("context-chart--available"),
            axis=kept("context-chart--axis"),
            measured=kept("context-chart--measured"),
        )
        current = nearest_column(contexts, data.current_tokens)
        cache_key = (data.key, top, columns)
        if data.key is None or self._totals[0] != cache_key:
            self._totals = (cache_key, data.totals(contexts))
        points = point_columns(contexts, data.points)
        return render_chart(
            contexts, self._totals[1], data.available, current, rows, styles, points
        )
