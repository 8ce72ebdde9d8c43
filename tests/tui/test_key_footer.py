"""The footer follows the focused widget's keys, and leaves its keys alone when they stay
the same (`KeyFooter.recompose`: Textual recomposes it whenever the keys may have
changed, and mounting them again cost the explorer's start a frame's worth of time)."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Static

from tui.widgets.key_footer import FooterKeyLike, KeyFooter


class _BoxX(Static, can_focus=True):
    """A focusable box with a key of its own."""

    BINDINGS = [Binding("x", "app.bell", "Ex")]  # noqa: RUF012 (Textual types it so)


class _BoxY(Static, can_focus=True):
    BINDINGS = [Binding("y", "app.bell", "Why")]  # noqa: RUF012 (Textual types it so)


class _Footed(App[None]):
    BINDINGS = [Binding("q", "quit", "Quit")]  # noqa: RUF012 (Textual types it so)

    def compose(self) -> ComposeResult:
        yield _BoxX("one", id="one")
        yield _BoxX("same", id="same")
        yield _BoxY("other", id="other")
        yield KeyFooter()


def _keys(app: App[None]) -> list[tuple[str, str]]:
    return [
        (key.key_display, key.description)
        for key in app.query_one(KeyFooter).children
        if isinstance(key, FooterKeyLike) and key.description != "palette"
    ]


def _widgets(app: App[None]) -> list[Widget]:
    return list(app.query_one(KeyFooter).children)


async def test_the_footer_shows_the_focused_widgets_keys_and_keeps_them_when_unchanged() -> None:
    app = _Footed()
    async with app.run_test(size=(100, 10)) as pilot:
        app.set_focus(app.query_one("#one"))
        await pilot.pause()
        await pilot.pause()
        assert ("x", "Ex") in _keys(app)
        assert ("q", "Quit") in _keys(app)
        shown = _widgets(app)

        app.set_focus(app.query_one("#same"))  # the same keys: the same widgets stay
        await pilot.pause()
        await pilot.pause()
        assert _widgets(app) == shown

        app.set_focus(app.query_one("#other"))  # other keys: the footer shows them
        await pilot.pause()
        await pilot.pause()
        assert ("y", "Why") in _keys(app)
        assert ("x", "Ex") not in _keys(app)


@pytest.mark.parametrize("width", [100, 160])  # compact below 120 columns, spaced above
async def test_each_key_is_as_wide_as_what_it_shows(width: int) -> None:
    # The keys are given their width (Textual's `width: auto` rendered each key once
    # more to find it): it must be the width of the text the key shows, no cut, no gap.
    app = _Footed()
    async with app.run_test(size=(width, 10)) as pilot:
        app.set_focus(app.query_one("#one"))
        await pilot.pause()
        await pilot.pause()
        footer = app.query_one(KeyFooter)
        assert footer.compact == (width < 120)
        keys = [k for k in footer.children if isinstance(k, FooterKeyLike)]
        assert len(keys) >= 3
        for key in keys:
            assert isinstance(key, Widget)
            shown = key.render()
            assert isinstance(shown, Text)
            assert shown.cell_len == key.size.width, shown.plain
