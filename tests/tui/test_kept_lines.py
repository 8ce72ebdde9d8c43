"""The lines a widget keeps between frames (`tui/widgets/repaint.py`'s KeptLines) are
always the lines Textual would render afresh: after keys that change values, focus and
classes, a resize and a theme change, and after the chart and the command lines changed
below the fold (SeenLines: repainted once in view) and were then scrolled into view, the
explorer's screen is cell for cell and style for style the screen of the same app whose
widgets render every frame anew and repaint every change at once; and a kept widget
renders as Textual's own widget does after an ancestor's style changes."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Label

from tests.tui.helpers import build_app, settle
from tui.widgets.repaint import KeptLabel, KeptLines, SeenLines

STEPS: tuple[tuple[str, ...], ...] = (
    ("right",),  # tokens: the top line, the slider, its box, the breakdown, the chart
    ("k",),  # the KV cache's choice (a Segmented) and the rows it changes
    ("tab",),  # focus moves: the focused control is styled anew
    ("b", "4", "enter"),  # batch typed into its box
    ("h", "1", ".", "5", "enter"),  # the allocator's factor
    ("right",),
    ("a",),  # focus to the memory picker
    ("escape",),
    ("t", "1", "3", "1", "0", "7", "2", "enter"),
)


async def screens(monkeypatch: pytest.MonkeyPatch, fresh: bool) -> list[str]:
    """The screen after each step, exported (Textual's public screenshot renders every
    widget through `render_lines`)."""
    if fresh:

        def afresh(self: Widget, crop: Region) -> list[Strip]:
            return Widget.render_lines(self, crop)

        monkeypatch.setattr(KeptLines, "render_lines", afresh)
        monkeypatch.setattr(SeenLines, "in_view", lambda self: True)  # every change at once
    shots: list[str] = []
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        shots.append(app.export_screenshot())
        # The chart drawn once, then out of view again: what it keeps is now the past.
        main = app.screen.query_one("#main")
        main.scroll_end(animate=False, immediate=True)
        await settle(pilot)
        main.scroll_home(animate=False, immediate=True)
        await settle(pilot)
        for keys in STEPS:
            await pilot.press(*keys)
            await settle(pilot)
            shots.append(app.export_screenshot())
        # The steps changed the chart below the fold; now in view.
        main.scroll_end(animate=False, immediate=True)
        await settle(pilot)
        shots.append(app.export_screenshot())
        # One column: the chart and the command lines under it change off view.
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        main.scroll_end(animate=False, immediate=True)
        await settle(pilot)
        main.scroll_home(animate=False, immediate=True)
        await settle(pilot)
        await pilot.press("t", "1", "6", "3", "8", "4", "enter")
        await settle(pilot)
        main.scroll_end(animate=False, immediate=True)
        await settle(pilot)
        shots.append(app.export_screenshot())
        await pilot.resize_terminal(100, 40)  # one column; the chart and notes re-fit
        await settle(pilot)
        shots.append(app.export_screenshot())
        app.theme = "textual-light"  # every widget restyled
        await settle(pilot)
        shots.append(app.export_screenshot())
    return shots


async def test_kept_lines_are_the_lines_rendered_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = await screens(monkeypatch, fresh=False)
    fresh = await screens(monkeypatch, fresh=True)
    assert len(kept) == len(fresh) == len(STEPS) + 5
    for step, (ours, theirs) in enumerate(zip(kept, fresh, strict=True)):
        assert ours == theirs, f"step {step}: a kept line differs from a fresh render"
    assert len(set(kept)) > len(STEPS)  # the steps changed the screen


class Box(App[None]):
    CSS = "Vertical { background: red; } Label { width: 10; }"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield KeptLabel("kept", id="kept")
            yield Label("kept", id="plain")


async def test_a_kept_widget_renders_as_textual_s_own_after_its_ancestor_changes() -> None:
    def lines(app: Box) -> list[list[tuple[str, object]]]:
        return [
            [(s.text, s.style) for s in label.render_lines(Region(0, 0, 10, 1))[0]]
            for label in (app.query_one("#kept", Label), app.query_one("#plain", Label))
        ]

    app = Box()
    async with app.run_test(size=(20, 3)) as pilot:
        before = lines(app)
        app.query_one(Vertical).styles.background = "blue"  # an ancestor's inline style
        await pilot.pause()
        recoloured = lines(app)
        for label in app.query(Label):
            label.update("new words")
        await pilot.pause()
        updated = lines(app)
    for kept, plain in (before, recoloured, updated):
        assert kept == plain
    assert recoloured != before and updated != recoloured
    assert updated[0][0][0] == "new words"
