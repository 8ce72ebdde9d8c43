"""The explorer's keys that move focus: the jumps, Escape, and what a text box keeps.

The jumps (`t` `i` `b` `h` `a` `p` `/`) and Escape from a plain text box are priority
bindings of the screen (`ExplorerScreen.BINDINGS`): Textual runs them before it hands
the next key of a burst to any widget, so `t4096` or `/llama` Esc `k` land where
they name. In a text box letters are text, and a slider's own box keeps Escape to
restore the value from before typing (`SliderField`).
"""

from __future__ import annotations

from textual.widgets import Input

from tui.controllers.measure import MeasureController
from tui.screens.styled_once import StyledOnceScreen
from tui.widgets.controls import Controls
from tui.widgets.model_list import ModelList
from tui.widgets.slider_field import ValueInput


class FocusKeys(StyledOnceScreen):
    """The focus actions of the explorer's screen."""

    measure: MeasureController

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Letters typed into a text box are text, not jumps; Escape leaves a plain text
        # box at once, while a slider's own box restores its value (SliderField).
        in_box = isinstance(self.focused, Input)
        if action == "leave_box":
            return in_box and not isinstance(self.focused, ValueInput)
        return not (action == "jump" and in_box)

    def action_leave_box(self) -> None:
        """Escape in the filter, Per device or size box: back to the token slider."""
        self.action_jump("tokens")

    def action_jump(self, where: str) -> None:
        """Move focus now (not after a refresh), so the keys after it land there."""
        if where == "filter":
            self.set_focus(self.query_one(ModelList).filter_box)
        elif where == "memory":
            self.set_focus(self.query_one("#memory Select"))
        elif where == "device_memory":
            if self.query_one("#device-memory-row").display:  # one device: no such row
                self.set_focus(self.query_one("#device-memory", Input))
            else:
                self.notify("Per device needs two devices or more: press d", timeout=4)
        elif not (field := self.query_one(Controls).field(where)).disabled:
            self.set_focus(field.slider)

    def action_escape(self) -> None:
        """Cancel a run in flight; otherwise (or from a text box) back to the token slider."""
        if self.measure.running and not isinstance(self.focused, Input):
            self.measure.cancel()
        else:
            self.action_jump("tokens")
