"""What repainting a widget costs less with: re-measuring an auto-height widget whose
content changed height, and styles kept between frames."""

from __future__ import annotations

from rich.style import Style
from textual.widget import Widget


def force_relayout(widget: Widget) -> None:
    """`refresh(layout=True)` that always re-measures the widget's height.

    Textual caches a widget's box under a counter that `refresh(layout=True)` bumps
    only when no layout is pending; a second change of height before the first is
    processed would keep the first height (seen as a one-line breakdown). Clearing
    the pending flag first makes every call bump the counter.
    """
    widget._layout_required = False
    widget.refresh(layout=True)


class KeptStyles:
    """A widget's Rich styles (its own and its component classes'), kept until the
    stylesheet restyles it.

    Textual recomputes both on every frame that repaints the widget (`rich_style` walks
    every ancestor; `refresh()` empties the component cache): a millisecond or more a
    key for the breakdown and the chart. The owner calls `clear` from its
    `notify_style_update`, which Textual calls whenever CSS (a theme, a class, a
    pseudo-class) restyles it or an ancestor.
    """

    def __init__(self, widget: Widget) -> None:
        self._widget = widget
        self._styles: dict[str, Style] = {}

    def base(self) -> Style:
        """The widget's own style (`Widget.rich_style`)."""
        style = self._styles.get("")
        if style is None:
            style = self._styles[""] = self._widget.rich_style
        return style

    def component(self, name: str) -> Style:
        """A component class's style (`Widget.get_component_rich_style`)."""
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self._widget.get_component_rich_style(name)
        return style

    def clear(self) -> None:
        self._styles.clear()
