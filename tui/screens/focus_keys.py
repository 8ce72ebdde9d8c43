"""The explorer's keys of its controls, and the ones that move focus: the jumps, Escape,
and what a text box keeps.

Each control's key is its descriptor's (`tui.model.control_specs`): `JUMP_BINDINGS` and
`CYCLE_BINDINGS` are built from them, and the screen lists them among its own
(`ExplorerScreen.BINDINGS`), so the footer and help show the descriptors' words. The
jumps (`t` `i` `b` `h` `a` `p`, and `/` to the model filter) and Escape from a plain text
box are priority bindings: Textual runs them before it hands the next key of a burst to
any widget, so `t4096` or `/llama` Esc `k` land where they name. In a text box letters
are text, and a slider's own box keeps Escape to restore the value from before typing
(`SliderField`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.widgets import Input

from tui.model.control_specs import (
    BACKEND,
    BY_FIELD,
    BY_ID,
    DEVICES,
    MAX_TOKENS,
    KeyAction,
    keyed,
)
from tui.screens.styled_once import StyledOnceScreen

if TYPE_CHECKING:
    from tui.controllers.measure import MeasureController
    from tui.model.state import ExplorerState

FILTER = "filter"
"""The model list's filter box: a jump target that is no control."""

JUMP_BINDINGS: tuple[Binding, ...] = tuple(
    Binding(spec.key, f"jump('{spec.id}')", spec.label, show=False, priority=True)
    for spec in keyed(KeyAction.JUMP)
)
"""A key per control that focus jumps to (priority: the keys after it land there)."""
CYCLE_BINDINGS: tuple[Binding, ...] = tuple(
    Binding(spec.key, f"cycle('{spec.field}')", spec.label) for spec in keyed(KeyAction.CYCLE)
)
"""A key per control that moves to its next choice (shown in the footer while they fit)."""


class FocusKeys(StyledOnceScreen):
    """The focus actions of the explorer's screen."""

    measure: MeasureController
    state: ExplorerState

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Letters typed into a text box are text, not jumps; Escape leaves a plain text
        # box at once, while a slider's own box restores its value (SliderField).
        in_box = isinstance(self.focused, Input)
        if action in ("jump", "cycle") and parameters:
            # A control of the other kind of model (mlxcel's on a GGUF, llama.cpp's on a
            # safetensors model): its key is idle and the footer leaves it out.
            spec = BY_ID.get(str(parameters[0])) or BY_FIELD.get(str(parameters[0]))
            if spec is not None and not spec.applies(self.state):
                return False
        if action == "leave_box":
            from tui.widgets.slider_field import ValueInput  # the body's: not for frame one

            return in_box and not isinstance(self.focused, ValueInput)
        return not (action == "jump" and in_box)

    def action_leave_box(self) -> None:
        """Escape in the filter, Per device or size box: back to the token slider."""
        self.action_jump(MAX_TOKENS.id)

    def action_jump(self, where: str) -> None:
        """Move focus now (not after a refresh), so the keys after it land there."""
        from tui.widgets.controls import Controls  # the body's: not for frame one
        from tui.widgets.model_list import ModelList

        if where == FILTER:
            self.set_focus(self.query_one(ModelList).filter_box)
            return
        spec = BY_ID[where]
        target = self.query_one(Controls).focus_target(spec)
        if target is not None:
            self.set_focus(target)
        elif spec.split_only:  # one device: no such row
            self.notify(f"{spec.label} needs two devices or more: press {DEVICES.key}", timeout=4)
        elif not spec.active(self.state):
            # What is typed after the key was meant for this control: left where focus
            # was, `i2048` on the CPU backend set the token count to 2048.
            self.set_focus(None)
            self.notify(
                f"{spec.label} is inactive on {self.state.backend.label}: {spec.inactive_why} "
                f"({BACKEND.key} changes the backend)",
                timeout=5,
            )

    def action_escape(self) -> None:
        """Cancel a run in flight; otherwise (or from a text box) back to the token slider."""
        if self.measure.running and not isinstance(self.focused, Input):
            self.measure.cancel()
        else:
            self.action_jump(MAX_TOKENS.id)
