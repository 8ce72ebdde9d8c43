"""Re-measuring an auto-height widget whose content changed height."""

from __future__ import annotations

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
