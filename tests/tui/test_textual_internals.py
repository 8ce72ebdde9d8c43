"""The pieces of Textual's private API (a widget's pending layout flag, `App._display`)
and of its behaviour (the order of handlers of the first `ScreenResume`) the explorer
relies on, checked so a Textual upgrade that changes them fails here, loudly, instead
of leaving stale heights on screen or slowing the start."""

from __future__ import annotations

import inspect

import pytest
from textual.app import App
from textual.dom import DOMNode
from textual.events import ScreenResume
from textual.geometry import Region
from textual.widget import Widget

from tests.tui.helpers import breakdown_bytes, build_app, settle
from tui.widgets.breakdown import Breakdown
from tui.widgets.command_lines_view import CommandLinesView
from tui.widgets.repaint import force_relayout


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


async def test_starting_up_styles_each_widget_once() -> None:
    # Restyling the whole screen costs 25-35 ms before the first frame. The explorer
    # avoids the two Textual would do: it sets the layout class (-wide) while composing,
    # and clears `ScreenResume.refresh_styles` of the first resume in its own handler,
    # which Textual calls before Screen's. Either change in Textual shows up here.
    assert "refresh_styles" in ScreenResume.__dataclass_fields__
    app = build_app(preset="gfx1151")
    restyled: list[str] = []  # the nodes restyled with widgets under them
    update_styles = app.update_styles

    def recording(node: DOMNode, animate: bool = True) -> None:
        if node.children:
            restyled.append(type(node).__name__)
        update_styles(node, animate=animate)

    app.update_styles = recording  # type: ignore[method-assign]
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.screen.has_class("-wide")
        assert "ExplorerScreen" not in restyled
        assert "Controls" not in restyled  # its focus border is inline, not :focus-within


async def test_footer_keys_still_carry_what_the_footer_measures_them_by() -> None:
    # tui/widgets/key_footer.py imports FooterKey from textual.widgets._footer and sizes
    # each key from its key_display and description; the compact flag changes the width.
    from textual.widgets._footer import FooterKey

    from tui.widgets.key_footer import KeyFooter, key_width

    app = build_app(preset="gfx1151")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeyFooter)
        assert footer.compact
        keys = [k for k in footer.query(FooterKey) if not k.has_class("-command-palette")]
        assert keys and all(k.size.width == key_width(k, True) - 1 for k in keys)  # + margin
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        await pilot.pause()
        keys = [k for k in footer.query(FooterKey) if not k.has_class("-command-palette")]
        assert not footer.compact
        assert keys and all(k.size.width == key_width(k, False) for k in keys)


async def test_a_token_key_lays_out_nothing_and_repaints_only_what_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A token key used to lay out the whole screen (two hints set to the same text:
    # `Static.update` asks for a layout) and repaint all of it (the state reactive's
    # own repaint): 20-40 ms a key. Textual's `Screen._refresh_layout` and
    # `Widget.refresh` are what a regression would call again.
    from textual.screen import Screen

    app = build_app(preset="gfx1151")
    layouts: list[str] = []
    refreshed: list[str] = []
    refresh_layout, refresh = Screen._refresh_layout, Widget.refresh

    def counted_layout(screen: Screen[object], *args: object, **kw: object) -> None:
        layouts.append(type(screen).__name__)
        refresh_layout(screen, *args, **kw)  # type: ignore[arg-type]

    def counted_refresh(widget: Widget, *args: object, **kw: object) -> Widget:
        refreshed.append(type(widget).__name__)
        return refresh(widget, *args, **kw)  # type: ignore[arg-type]

    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.pause()
        before = breakdown_bytes(app)["Total estimate"]
        monkeypatch.setattr(Screen, "_refresh_layout", counted_layout)
        monkeypatch.setattr(Widget, "refresh", counted_refresh)
        await pilot.press("right")
        await settle(pilot)
        await pilot.pause()
        assert breakdown_bytes(app)["Total estimate"] > before  # the key did its work
        assert layouts == []
        assert "ExplorerScreen" not in refreshed
        assert {"Breakdown", "ContextChart", "SummaryLine"} <= set(refreshed)
        monkeypatch.undo()  # quitting refreshes the screen, as it may


async def test_a_token_key_paints_one_frame_holding_the_knob_and_the_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The knob used to be painted at once and the estimate it moves in a second frame,
    # which Textual's 60 Hz update timer held back a tick (~17 ms a key). Now the knob
    # is painted when the screen shows the state: one frame, both in it.
    from textual._compositor import Compositor

    from tui.widgets.stop_slider import StopSlider

    app = build_app(preset="gfx1151")
    frames: list[set[Region]] = []
    render_update = Compositor.render_update

    def counted(compositor: Compositor, *args: object, **kw: object) -> object:
        frames.append(set(compositor._dirty_regions))
        return render_update(compositor, *args, **kw)  # type: ignore[arg-type]

    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.pause()
        knob = app.screen.query_one("#tokens StopSlider", StopSlider)
        before = knob.position, breakdown_bytes(app)["Total estimate"]
        monkeypatch.setattr(Compositor, "render_update", counted)
        await pilot.press("right")
        await settle(pilot)
        await pilot.pause()
        monkeypatch.undo()
        assert (knob.position, breakdown_bytes(app)["Total estimate"]) > before
        assert len(frames) == 1, frames
        painted = frames[0]
        for widget in (knob, app.screen.query_one(Breakdown)):
            assert any(widget.region.overlaps(region) for region in painted), widget


async def test_the_explorer_writes_what_textual_would_for_each_partial_repaint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # tui/screens/front_paint.py renders only the widgets seen in the changed regions
    # (Textual renders every widget in the rectangle around them) and reads the
    # compositor's private `_get_renders`, `_visible_widgets` and `_dirty_regions`.
    # Each repaint here is also made Textual's way, from the same changed regions, and
    # what reaches the terminal must be the same: keys that move a slider, a choice,
    # focus (the border lights), the devices (rows come and go), a typed value. The
    # one difference allowed: Textual also moves the cursor to a chop of a widget that
    # starts where a changed span ends, and writes nothing there.
    import re

    from textual._compositor import ChopsUpdate, Compositor

    from tui.screens.front_paint import FrontPaintCompositor

    app = build_app(preset="gfx1151")
    compared: list[int] = []
    ours = FrontPaintCompositor.render_partial_update

    def both(compositor: FrontPaintCompositor) -> ChopsUpdate | None:
        changed = set(compositor._dirty_regions)
        textual_way = Compositor.render_partial_update(compositor)
        compositor._dirty_regions.update(changed)
        update = ours(compositor)
        assert (update is None) == (textual_way is None)
        if update is not None and textual_way is not None:
            bare_move = re.compile(r"\x1b\[\d+;\d+H(?=\x1b\[\d+;\d+H|\n|$)")
            written = update.render_segments(app.console)
            assert written == bare_move.sub("", textual_way.render_segments(app.console))
            compared.append(len(changed))
        return update

    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.pause()
        assert isinstance(app.explorer._compositor, FrontPaintCompositor)
        monkeypatch.setattr(FrontPaintCompositor, "render_partial_update", both)
        for keys in (["right"], ["left", "left"], ["k"], ["d"], ["tab"], ["t", "4", "0"]):
            await pilot.press(*keys)
            await settle(pilot)
            await pilot.pause()
        monkeypatch.undo()
    assert len(compared) >= 6 and max(compared) > 1, compared


async def test_a_token_key_renders_the_widgets_that_changed_and_no_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Textual renders every widget in the rectangle around the changed regions: for a
    # token key all 36 on screen (the model list, every control, the containers'
    # lines cut at every column). The explorer renders the six that changed, and of
    # the breakdown only the lines whose text or colour changed.
    from textual._styles_cache import StylesCache

    app = build_app(preset="gfx1151")
    rendered: list[str] = []
    lines: list[str] = []
    render_lines, render_line = Widget.render_lines, StylesCache.render_line

    def counted_widget(widget: Widget, crop: Region) -> list[object]:
        rendered.append(type(widget).__name__)
        return render_lines(widget, crop)  # type: ignore[return-value]

    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.pause()
        breakdown = app.screen.query_one(Breakdown)
        commands = app.screen.query_one("#commands", CommandLinesView)

        def counted_line(cache: StylesCache, *args: object, **kw: object) -> object:
            if cache is breakdown._styles_cache:
                lines.append("breakdown")
            if cache is commands._styles_cache:
                lines.append("commands")
            return render_line(cache, *args, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(Widget, "render_lines", counted_widget)
        monkeypatch.setattr(StylesCache, "render_line", counted_line)
        await pilot.press("right")
        await settle(pilot)
        await pilot.pause()
        monkeypatch.undo()
        changed = {"SummaryLine", "StopSlider", "ValueInput", "Breakdown", "ContextChart"}
        assert changed | {"CommandLinesView"} == set(rendered)
        assert 0 < lines.count("breakdown") <= breakdown.size.height // 2
        # of the command lines, those with the token count: not the other six
        assert 0 < lines.count("commands") <= commands.size.height // 2
