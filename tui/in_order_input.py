"""A text box that takes a burst of keys in the order they were typed.

Textual gives a printable key to the focused box at once, but a key the box binds
(Backspace, Delete, Enter, the arrows) bubbles up through every container above the
box, a message queue each, before the app runs the binding; the keys typed after it
reach the box first. A burst (a paste, a fast typist, tmux `send-keys`) of three
Backspaces and `2` in a box holding `8192` left `81`, not `82`; a bare Textual 8.2.8
app does the same. `InOrderInput` runs the bindings of a key that is not text where
the key arrives, as the app would have run them once it bubbled up: from the focused
box up, the box's own first (priority bindings ran before the key got here). A key no
binding takes still bubbles, so a container's own handler gets it as before (Down in
the model filter moves to the list: `ModelList.on_key`).
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class InOrderInput(Input):
    """An `Input` whose bound keys take effect in the order they were typed."""

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable:
            return  # Input inserts it, at once
        # The app's own check (focused widget up), run here instead of after the bubble.
        if await self.app._check_bindings(event.key):
            event.stop()
            event.prevent_default()
