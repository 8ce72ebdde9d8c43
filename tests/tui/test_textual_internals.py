"""The two pieces of Textual's private API the explorer relies on (a widget's pending
layout flag, `App._display`), checked so a Textual upgrade that changes them fails
here, loudly, instead of leaving stale heights on screen or slowing the start."""

from __future__ import annotations

import inspect

from textual.app import App
from textual.widget import Widget

from tests.tui.helpers import breakdown_bytes, build_app, settle
from tui.widgets.breakdown import Breakdown
from tui.widgets.relayout import force_relayout


def test_widgets_still_have_the_pending_layout_flag_force_relayout_clears() -> None:
    widget = Widget()
    assert isinstance(widget._layout_required, bool)  # force_relayout resets it
    force_relayout(widget)  # unmounted: must not raise


async def test_two_height_changes_before_a_layout_end_at_the_second_height() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        breakdown = app.screen.query_one(Breakdown)
        full = breakdown.size.height
        breakdown.show_loading("one line")
        view = breakdown.view
        assert view is None
        # Back to the table in the same frame: the height must be the table's again.
        app.explorer.recompute()
        await pilot.pause()
        assert breakdown.size.height == full
        assert "Total estimate" in breakdown_bytes(app)


async def test_the_first_frame_textual_writes_starts_the_held_reads() -> None:
    # VramscopeApp overrides App._display (private) to start the first reads once the
    # first frame is out; a Textual that stopped calling it would leave them to the
    # slower settle fallback, so say so here.
    assert list(inspect.signature(App._display).parameters) == ["self", "screen", "renderable"]
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app._first_frame_out
        assert app.explorer.loader.settled
        assert "Total estimate" in breakdown_bytes(app)
