"""What repainting a widget costs less with: styles kept between frames, a widget's
rendered lines kept between frames (`KeptLines`), and a one-line widget drawn through the
line API (`OneLine`).

A Static (or a widget's `render`) is converted from Rich text to Textual's content
on every repaint: 0.5-1 ms a line, and a token key repaints the summary and a
slider. `OneLine` keeps the strip it drew until what it shows, its width or its
styles change (`KeptStyles`), so a repaint costs a quarter of that."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Self

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.dom import NoScreen
from textual.errors import NoWidget
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Label, Static


def line_strip(
    line: Text, before: Mapping[object, Strip], console: Console, base: Style
) -> tuple[object, Strip]:
    """A line's strip and what it is drawn from (its words and styles): the strip drawn
    from the same before, else drawn now. A key changes few of a panel's lines."""
    key = (line.plain, tuple(line.spans))
    strip = before.get(key)
    if strip is None:
        strip = Strip(list(line.render(console))).apply_style(base)
    return key, strip


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


class KeptLines(Widget):
    """A widget whose rendered lines (content, borders, background) are kept until Textual
    says they may differ: a `refresh` (every change of content, of its own or an
    ancestor's styles, and Textual's own repaints go through it), a restyle
    (`notify_style_update`), another size or crop, or other line filters.

    Textual's compositor renders every widget that overlaps the rectangle around a
    frame's changes, and a token key changes the top line and the chart at the bottom:
    all the controls are rendered again unchanged, each walking its ancestors for its
    background (about 1.6 ms of a 13 ms key at 160x48). Not for a widget whose lines
    change without a refresh, such as one with links, which Textual restyles on hover.
    Textual's scrolling widgets do refresh: a ScrollView (an Input, an OptionList) on
    every scroll of its own, and a scrolling container's own lines (its background)
    do not move with its children.
    """

    _kept_lines: tuple[tuple[object, ...], list[Strip]] | None = None

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        self._kept_lines = None
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def notify_style_update(self) -> None:
        self._kept_lines = None
        super().notify_style_update()

    def render_lines(self, crop: Region) -> list[Strip]:
        key = (crop, self.size, *self.get_line_filters())
        kept = self._kept_lines
        if kept is not None and kept[0] == key:
            return kept[1]
        lines = super().render_lines(crop)
        self._kept_lines = (key, lines)
        return lines


class SeenLines(KeptLines):
    """Kept lines repainted only while some of the widget is in view.

    At 160x48 and 80x24 the chart (and the command lines under it) sit below the fold,
    and a token key changed them. Textual's compositor takes a repainted widget that is
    not on screen for a new one and lays out the whole screen again to find it: an
    eighth of a key's processor time under cProfile. Off view, `repaint` notes the
    change instead; when the compositor next draws the widget (scrolled or laid out
    into view), its lines are drawn afresh first (`when_seen`, then a refresh, in
    `render_lines`).
    """

    _unseen_change = False

    def in_view(self) -> bool:
        """Whether some of the widget was on screen at the last layout or scroll."""
        try:
            return bool(self.screen.find_widget(self).visible_region)
        except (NoScreen, NoWidget):
            return False

    def repaint(self, *regions: Region) -> None:
        """`refresh(*regions)` now if the widget is in view, else once it is drawn."""
        if self.in_view():
            self.when_seen()
            self.refresh(*regions)
        else:
            self._unseen_change = True

    def when_seen(self) -> None:
        """Apply what waited for the widget to be in view (its border titles)."""

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._unseen_change:
            self._unseen_change = False
            self.when_seen()
            self.refresh()  # drops the lines Textual kept from before the change
        return super().render_lines(crop)


# Textual's class first: Textual styles a widget by the CSS of the classes on its first
# bases' line (`Horizontal`'s layout, `Label`'s width), and KeptLines still comes before
# Widget in the method order.


class KeptRow(Horizontal, KeptLines):
    """A row of controls (Textual's `Horizontal`, and styled as one)."""


class KeptColumn(Vertical, KeptLines):
    """A box of widgets one above the other (Textual's `Vertical`, and styled as one)."""


class KeptScroll(VerticalScroll, KeptLines):
    """A scrolling column (Textual's `VerticalScroll`, and styled as one)."""


class KeptLabel(Label, KeptLines):
    """A control's label (Textual's `Label`, and styled as one); plain words, no links."""


class KeptStatic(Static, KeptLines):
    """A control's hint (Textual's `Static`, and styled as one); plain words, no links."""


class OneLine(KeptLines):
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
