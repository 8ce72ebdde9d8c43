"""What repainting a widget costs less with: styles kept between frames, and a one-line
widget drawn through the line API (`OneLine`).

A Static (or a widget's `render`) is converted from Rich text to Textual's content
on every repaint: 0.5-1 ms a line, and a token key repaints the summary and a
slider. `OneLine` keeps the strip it drew until what it shows, its width or its
styles change (`KeptStyles`), so a repaint costs a quarter of that."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget


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


class OneLine(Widget):
    """A line drawn for the width it is painted at (the first frame's, a resize's: words
    chosen before the layout would show a line meant for another width)."""

    def __init__(
        self,
        *,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        super().__init__(id=id, classes=classes, disabled=disabled)
        self.kept = KeptStyles(self)
        self._strip: tuple[object, int, Strip] | None = None

    def line_key(self) -> object:
        """What the line shows: the line is drawn again when it changes."""
        raise NotImplementedError

    def line(self, width: int) -> Text:
        """The line for `width` cells."""
        raise NotImplementedError

    @property
    def text(self) -> str:
        """The words on show."""
        return self.line(self.size.width or 200).plain

    def notify_style_update(self) -> None:
        self.kept.clear()
        self._strip = None  # it carries the old styles
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        base = self.kept.base()
        width = self.size.width
        if y != 0:
            return Strip.blank(width, base)
        key = self.line_key()
        cached = self._strip
        if cached is None or cached[0] != key or cached[1] != width:
            text = self.line(width)
            text.truncate(width, overflow="ellipsis")
            strip = Strip(text.render(self.app.console)).apply_style(base)
            cached = self._strip = (key, width, strip.adjust_cell_length(width, base))
        return cached[2]
