"""The total against context (log scale) at the current settings, with the available line.

The widget samples one context per column of its own width and asks the
screen's estimator for the totals, so the curve is the real `estimate()` at
every column and costs a few hundred microseconds per frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual.widget import Widget

from tui.chart import LABEL_WIDTH, ChartStyles, nearest_column, render_chart, sample_contexts
from tui.scales import MIN_TOKENS

Totals = Callable[[Sequence[int]], list[int]]


@dataclass(frozen=True)
class ChartData:
    """What to plot: totals at any contexts, the range, the marker and the budget."""

    totals: Totals
    top_tokens: int
    current_tokens: int
    available: int


class ContextChart(Widget):
    """Columns of the total from 256 tokens to the model's trained context."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "context-chart--fits",
        "context-chart--over",
        "context-chart--current",
        "context-chart--available",
        "context-chart--axis",
    }

    DEFAULT_CSS = """
    ContextChart {
        height: 12;
        & > .context-chart--fits { color: $success; }
        & > .context-chart--over { color: $error; }
        & > .context-chart--current { color: $accent; text-style: bold; }
        & > .context-chart--available { color: $warning; }
        & > .context-chart--axis { color: $text-muted; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.data: ChartData | None = None

    def show(self, data: ChartData | None) -> None:
        """Plot new data (None clears the chart)."""
        self.data = data
        self.refresh()

    def render(self) -> RenderableType:
        data = self.data
        columns = (self.content_region.width or self.size.width) - LABEL_WIDTH - 2
        rows = (self.content_region.height or self.size.height) - 2
        if data is None or columns < 8 or rows < 2:
            return Text("")
        top = max(data.top_tokens, data.current_tokens, MIN_TOKENS + 1)
        contexts = sample_contexts(MIN_TOKENS, top, columns)
        styles = ChartStyles(
            fits=self.get_component_rich_style("context-chart--fits"),
            over=self.get_component_rich_style("context-chart--over"),
            current=self.get_component_rich_style("context-chart--current"),
            available=self.get_component_rich_style("context-chart--available"),
            axis=self.get_component_rich_style("context-chart--axis"),
        )
        current = nearest_column(contexts, data.current_tokens)
        return render_chart(contexts, data.totals(contexts), data.available, current, rows, styles)
