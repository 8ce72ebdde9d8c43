"""The Fits view's Hub scope in a real terminal: `f`, `h`, a query typed as one burst,
rows from the suite's local Hub, and Enter opening the top row in the explorer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.hub.hub_fit_repos import AUTHOR, publish_sixty, repo_files
from tests.hub_server import FakeHub
from tests.tui.tmux_driver import tmux_vramscope

pytestmark = [pytest.mark.child_process, pytest.mark.slow]


@pytest.fixture
def hub_env(tmp_path: Path) -> Iterator[tuple[FakeHub, dict[str, str]]]:
    server = FakeHub().start()
    publish_sixty(server, [repo_files(i) for i in range(5)])
    env = {
        "HF_ENDPOINT": server.url,
        "HF_HUB_OFFLINE": "0",
        "NO_PROXY": "127.0.0.1,localhost",
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_CACHE": str(tmp_path / "hf-home" / "hub"),
    }
    try:
        yield server, env
    finally:
        server.stop()


def test_a_burst_query_lists_reads_and_enter_opens_the_top_row(
    hub_env: tuple[FakeHub, dict[str, str]],
) -> None:
    hub, env = hub_env
    args = ("--preset", "gfx1151", "--backend", "rocm")
    with tmux_vramscope((160, 48), *args, env=env) as app:
        app.wait_for(lambda s: "Quit" in s and "FITS" in s, "the first estimate")
        app.burst("f")
        app.wait_for(lambda s: "rows fit" in s, "the local rows")
        app.burst(f"hauthor:{AUTHOR}\r")
        screen = app.wait_for(lambda s: "5 listed" in s and "5 read" in s, "the Hub rows")
        rows = [line for line in screen.splitlines() if f"{AUTHOR}/model-" in line]
        assert len(rows) == 15 and not any("≈" in row for row in rows)
        assert f"│ author:{AUTHOR} " in screen  # every key of the burst in the box
        top = rows[0].split()[1]  # the frame's border, then the model
        assert top.startswith(f"{AUTHOR}/model-")
        app.burst("\r")
        screen = app.wait_for(lambda s: top in s and "What fits" not in s, "the explorer")
        assert "Quit" in screen
    assert any("/api/models?" in r for r in hub.requests)
