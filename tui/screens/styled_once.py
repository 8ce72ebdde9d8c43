"""A screen whose widgets Textual styles once, not three times, before the first frame.

Textual styles each widget as it mounts, then restyles the whole screen twice more
on start-up: at the first `ScreenResume`, and when the first resize adds the
breakpoint class (`-wide`). With 80 widgets each pass costs 25-35 ms before the
first frame. tests/tui/test_textual_internals.py fails if either comes back.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.screen import Screen


class StyledOnceScreen(Screen[Any]):
    """Sets its breakpoint class while composing and skips the first resume's restyle."""

    def __init__(self) -> None:
        super().__init__()
        self._resumed = False

    def add_layout_class(self) -> None:
        """Call first in `compose`: the breakpoint class for this width, while no widget
        is mounted yet (Textual's own, at the first resize, would restyle them all)."""
        width = self.app.size.width
        fitting = [(w, c) for w, c in self.HORIZONTAL_BREAKPOINTS or [] if width >= w]
        if fitting:
            self.add_class(max(fitting)[1])

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # Runs before Screen's own handler (Textual calls a subclass's first). The first
        # resume comes right after the mount styled every widget.
        if not self._resumed:
            self._resumed = True
            event.refresh_styles = False
