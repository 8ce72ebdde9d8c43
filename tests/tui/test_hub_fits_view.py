"""The Fits view's Hub scope (`f`, then `h`): a query typed as a burst lists on a worker,
every repo shows its `≈` bound at once and turns exact as its headers arrive, each exact
row is `vramscope fit --hub`'s for the same settings, and Enter opens that model at that
quantization in the explorer. Against tests/hub_server.py's local Hub."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from core.backend import Backend
from core.estimate.available import AvailableMemory
from tests.core.hub.hub_fit_repos import AUTHOR, publish_sixty, repo_files
from tests.factories import GFX1151_LIMIT, build_app
from tests.hub_server import FakeHub
from tests.tui.helpers import settle, type_keys, wait_for
from tui.app import VramscopeApp
from tui.cli import main
from tui.deps import GFX1151_MACHINE, builtin_deps
from tui.screens.fits_screen import FitsScreen
from tui.screens.hub_fits_screen import HubFitsScreen
from tui.widgets.fit_table_view import FitTableView

REPOS = 5


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A local Hub with five small repos; the environment points at it, caches per test."""
    server = FakeHub().start()
    publish_sixty(server, [repo_files(i) for i in range(REPOS)])
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
    try:
        yield server
    finally:
        server.stop()


def hub_app() -> VramscopeApp:
    deps = builtin_deps(AvailableMemory(GFX1151_LIMIT, "test"), GFX1151_MACHINE, hub=True)
    return build_app(deps, backend=Backend.ROCM, memory_limit=GFX1151_LIMIT)


async def open_hub_scope(pilot: Pilot[Any]) -> HubFitsScreen:
    """Settle, `f`, wait for the local rows, `h`."""
    app = pilot.app
    await settle(pilot)
    await pilot.press("f")
    await wait_for(pilot, lambda: isinstance(app.screen, FitsScreen) and app.screen.done, "rows")
    await type_keys(pilot, "h")
    await wait_for(pilot, lambda: isinstance(app.screen, HubFitsScreen), "the Hub scope")
    screen = app.screen
    assert isinstance(screen, HubFitsScreen)
    return screen


async def test_a_query_lists_bounds_first_then_exact_rows_as_fit_hub_gives(
    hub: FakeHub, capsys: pytest.CaptureFixture[str]
) -> None:
    app = hub_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_hub_scope(pilot)
        hub.hold(".safetensors")  # the headers wait: the bounds are on screen before them
        await type_keys(pilot, f"author:{AUTHOR}\r")
        table = screen.query_one(FitTableView)
        await wait_for(pilot, lambda: len(table.rows) == REPOS, "the listing's rows")
        assert all("≈" in " ".join(row) for row in table.rows)
        assert not screen.done
        hub.release()
        await wait_for(pilot, lambda: screen.done, "every repo read", limit_s=60)
        await pilot.pause()
        assert "5 listed" in screen.status and "5 read" in screen.status
        exact = {(r.listed.repo_id, r.quantization.word): r for r in screen.shown if r.exact}
        assert len(exact) == REPOS * 3  # stored, mlx-8bit, mlx-4bit
        assert not any("≈" in " ".join(row) for row in table.rows)
        command = shlex.split(screen.inputs.command)[1:]
        # Enter on the third row opens that model at that quantization.
        await pilot.press("down", "down")
        assert table.cursor == 2
        picked = screen.shown[2]
        await type_keys(pilot, "\r")
        await wait_for(pilot, lambda: app.explorer.state.model == picked.listed.repo_id, "open")
        assert app.explorer.state.quantize_as == picked.quantization
        assert app.screen is app.explorer
    # `vramscope fit --hub` with the view's settings: the same rows, to the byte.
    capsys.readouterr()
    assert main([*command, "--hub", "--author", AUTHOR, "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["rows"]
    assert {(r["model"], r["quantization"]): r["total_bytes"] for r in cli} == {
        k: r.row.total_bytes for k, r in exact.items() if r.row is not None
    }


async def test_a_gated_repo_stays_a_bound_and_enter_on_it_says_why(hub: FakeHub) -> None:
    hub.repos[f"{AUTHOR}/model-04"].gated = True  # the most downloaded: listed first
    app = hub_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_hub_scope(pilot)
        await type_keys(pilot, f"author:{AUTHOR} sort:downloads\r")
        await wait_for(pilot, lambda: screen.done, "every repo read", limit_s=60)
        await pilot.pause()
        screen.sort, screen.descending = "DOWNLOADS", True
        screen._paint()
        assert "gated" in " ".join(screen.query_one(FitTableView).rows[0])
        await type_keys(pilot, "\r")
        assert app.screen is screen  # nothing opened
        await type_keys(pilot, "/bad sort:sideways\r")
        await wait_for(pilot, lambda: screen.done and "sort" in screen.status, "the reason")
        assert app.is_running


async def test_a_burst_after_h_lands_in_the_query_box_and_h_in_the_filter_is_a_letter(
    hub: FakeHub,
) -> None:
    app = hub_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await wait_for(
            pilot, lambda: isinstance(app.screen, FitsScreen) and app.screen.done, "rows"
        )
        fits = app.screen
        await pilot.press("slash")
        await type_keys(pilot, "phi\r")  # the filter takes `h` as text
        assert fits.query_one("#fits-filter", Input).value == "phi"
        assert app.screen is fits
        await type_keys(pilot, f"hauthor:{AUTHOR}\r")  # one burst: every key in the box
        screen = app.screen
        assert isinstance(screen, HubFitsScreen)
        assert screen.query_one("#hub-query", Input).value == f"author:{AUTHOR}"
        await wait_for(pilot, lambda: screen.done, "every repo read", limit_s=60)
        assert len(screen.shown) == REPOS * 3


async def hub_rows_done(pilot: Pilot[Any]) -> None:
    """Open the Hub scope, list the test org, wait for every repo's rows."""
    screen = await open_hub_scope(pilot)
    await type_keys(pilot, f"author:{AUTHOR}\r")
    await wait_for(pilot, lambda: screen.done, "every repo read", limit_s=60)
    await pilot.pause()


class TestHubScopeSnapshots:
    def test_hub_scope_160x48(self, hub: FakeHub, snap_compare: Any) -> None:
        """Five repos, each stored and as 8/4-bit what-ifs, with the listing's columns."""
        assert snap_compare(hub_app(), terminal_size=(160, 48), run_before=hub_rows_done)

    def test_hub_scope_80x24(self, hub: FakeHub, snap_compare: Any) -> None:
        """The narrow layout: the table scrolls sideways, the status wraps."""
        assert snap_compare(hub_app(), terminal_size=(80, 24), run_before=hub_rows_done)


async def test_a_slash_burst_lands_in_the_box_and_a_slash_in_the_box_is_a_letter(
    hub: FakeHub,
) -> None:
    # `/` then the text in one burst: with `/` a plain binding the first letters went to
    # the table focus was leaving. In the box `/` is a letter: repo ids have one (the
    # Hub scope's priority `/` once dropped it from `Qwen/Qwen3`).
    app = hub_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await wait_for(
            pilot, lambda: isinstance(app.screen, FitsScreen) and app.screen.done, "rows"
        )
        fits = app.screen
        await type_keys(pilot, "/qwen/q")
        assert fits.query_one("#fits-filter", Input).value == "qwen/q"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is not fits, "back to the explorer")
        screen = await open_hub_scope(pilot)  # the query box has the focus
        await type_keys(pilot, "Qwen/Qwen3")
        assert screen.query_one("#hub-query", Input).value == "Qwen/Qwen3"
