"""A partial repaint that renders only the widgets seen in the regions that changed.

Textual's compositor repaints a frame's changed regions by rendering every widget
that overlaps the rectangle around all of them. A token key changes the summary
line at the top, the chart at the bottom and the breakdown, the command lines and
the slider between: that rectangle is the whole screen, so all 36 widgets on it were
rendered (every container's lines cut at every column where a widget starts) to
paint the six that changed, two thirds of the frame's cost.

A widget is seen in a changed region only if no widget in front of it covers the
whole region: Textual gives each cell to the front-most widget there, and every
widget fills its own visible region. So for each changed region this compositor
takes the widgets from the front back to the first one that covers it (the widget
that changed, or an overlay over it), and renders only those. What is written to
the terminal is byte for byte what Textual writes
(tests/tui/test_textual_internals.py compares the two on the explorer).
"""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget


class FrontPaintCompositor(Compositor):
    """Textual's compositor; its partial updates render only what they can show."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[Widget] | None = None
        """While a partial update renders: the widgets seen in its changed regions."""

    def render_partial_update(self) -> ChopsUpdate | None:
        self._seen = seen_in(self.visible_widgets, self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._seen = None

    def _get_renders(
        self, crop: Region | None = None
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        renders = super()._get_renders(crop)
        seen = self._seen
        if seen is None:
            return renders
        visible = self.visible_widgets
        try:  # the base reads the widgets when it starts: hand it those seen
            self._visible_widgets = {w: visible[w] for w in visible if w in seen}
            first = next(iter(renders), None)
        finally:
            self._visible_widgets = visible
        return renders if first is None else _chain(first, renders)


def front_paint_compositor() -> Compositor:
    """This compositor where the Textual installed has the members it builds on (they
    are private: a later Textual may move them), else Textual's own."""
    plain = Compositor()
    needed = ("_get_renders", "_visible_widgets", "_dirty_regions", "visible_widgets")
    if all(hasattr(plain, name) for name in needed) and hasattr(plain, "render_partial_update"):
        return FrontPaintCompositor()
    return plain


def seen_in(widgets: dict[Widget, tuple[Region, Region]], regions: Iterable[Region]) -> set[Widget]:
    """The widgets (front-most first, each with its region and clip, as
    `Compositor.visible_widgets`) that show in some cell of `regions`."""
    seen: set[Widget] = set()
    visible = [(widget, region.intersection(clip)) for widget, (region, clip) in widgets.items()]
    for changed in regions:
        for widget, shown in visible:
            if shown.overlaps(changed):
                seen.add(widget)
                if shown.contains_region(changed):
                    break  # every widget behind this one is hidden here
    return seen


def _chain(
    first: tuple[Region, Region, list[Strip]],
    rest: Iterable[tuple[Region, Region, list[Strip]]],
) -> Iterable[tuple[Region, Region, list[Strip]]]:
    yield first
    yield from rest
