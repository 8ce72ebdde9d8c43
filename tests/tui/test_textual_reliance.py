"""What the explorer relies on from Textual, through its public API only, checked so that a
Textual upgrade that changes it fails here, loudly, instead of leaving stale heights on
screen or slowing the start: a relayout's heights, the `Ready` event after the first
frame, one styling pass, the footer's keys, a key that lays nothing out."""

from __future__ import annotations

import pytest
from textual.dom import DOMNode
from textual.events import ScreenResume
from textual.widget import Widget

from tests.tui.helpers import breakdown_bytes, build_app, settle
from tui.app import VramscopeApp
from tui.widgets.breakdown import Breakdown


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


async def test_the_body_mounts_and_the_held_reads_start_once_textual_is_ready(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Textual posts `Ready` right after writing its first frame; the explorer mounts its
    # body then (the first frame holds only the top lines and the footer), and only then
    # starts the reads held for that frame. Without Ready the body would wait for
    # BODY_LIMIT_S (a second), which a user sees.

    from tui.screens.explorer_screen import ExplorerScreen

    order: list[str] = []
    real_ready, real_mount = VramscopeApp.on_ready, ExplorerScreen.mount_body

    def ready(app: VramscopeApp) -> None:
        order.append("ready")
        real_ready(app)

    async def mount(screen: ExplorerScreen) -> None:
        order.append("body")
        await real_mount(screen)

    monkeypatch.setattr(VramscopeApp, "on_ready", ready)
    monkeypatch.setattr(ExplorerScreen, "mount_body", mount)
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert order[:2] == ["ready", "body"], order
        assert app.explorer.body_ready.is_set() and app.explorer.loader.settled
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
    # tui/widgets/key_footer.py sizes each of Textual's footer keys (queried by its type
    # name: the class is private) from its key_display and description; the compact
    # flag changes the width.
    from tui.widgets.key_footer import FooterKeyLike, KeyFooter, key_width

    def footer_keys(footer: KeyFooter) -> list[FooterKeyLike]:
        keys = [k for k in footer.query("FooterKey") if not k.has_class("-command-palette")]
        assert all(isinstance(k, FooterKeyLike) for k in keys)
        return keys  # type: ignore[return-value]

    app = build_app(preset="gfx1151")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeyFooter)
        assert footer.compact
        keys = footer_keys(footer)
        assert keys and all(k.size.width == key_width(k, True) - 1 for k in keys)  # type: ignore[attr-defined]
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        await pilot.pause()
        keys = footer_keys(footer)
        assert not footer.compact
        assert keys and all(k.size.width == key_width(k, False) for k in keys)  # type: ignore[attr-defined]


async def test_a_token_key_lays_out_nothing_and_repaints_only_what_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A token key used to lay out the whole screen (two hints set to the same text:
    # `Static.update` asks for a layout) and repaint all of it (the state reactive's
    # own repaint): 20-40 ms a key. A layout is asked of the screen with a `Layout`
    # message, a repaint with `Widget.refresh`: a regression would send them again.
    from textual import messages
    from textual.screen import Screen

    app = build_app(preset="gfx1151")
    layouts: list[str] = []
    refreshed: list[str] = []
    post, refresh = Screen.post_message, Widget.refresh

    def counted_post(screen: Screen[object], message: object) -> bool:
        if isinstance(message, messages.Layout):
            layouts.append(type(screen).__name__)
        return post(screen, message)  # type: ignore[arg-type]

    def counted_refresh(widget: Widget, *args: object, **kw: object) -> Widget:
        if kw.get("layout"):
            layouts.append(type(widget).__name__)
        refreshed.append(type(widget).__name__)
        return refresh(widget, *args, **kw)  # type: ignore[arg-type]

    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.pause()
        before = breakdown_bytes(app)["Total estimate"]
        monkeypatch.setattr(Screen, "post_message", counted_post)
        monkeypatch.setattr(Widget, "refresh", counted_refresh)
        await pilot.press("right")
        await settle(pilot)
        await pilot.pause()
        monkeypatch.undo()  # quitting refreshes the screen, as it may
        assert breakdown_bytes(app)["Total estimate"] > before  # the key did its work
        assert layouts == []
        assert "ExplorerScreen" not in refreshed
        assert {"Breakdown", "ContextChart", "SummaryLine"} <= set(refreshed)
