"""Issue #18: a repo id typed in the model list that is not local is read from the Hub.

Against tests/hub_server.py's local Hub: the filter offers *read org/name from the
Hub*, Enter reads it off the UI thread (the list and the breakdown say so meanwhile,
and keys keep working), the model is then listed marked `hub` with the total `inspect`
gives for it, and a restarted app with the Hub off still lists and reads it from the
store. A read the Hub refuses is its one-line reason under the row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import OptionList

from core.backend import Backend
from core.catalog.entry import ORIGIN_HUB
from core.catalog.profiles import load_profile
from core.estimate.available import AvailableMemory
from tests.factories import GFX1151_LIMIT, build_app
from tests.hub_server import FakeHub, sparse_from_folder
from tests.model_writers import write_skeleton
from tests.tui.helpers import breakdown_bytes, breakdown_text, settle, type_keys, wait_for
from tui.app import VramscopeApp
from tui.cli import main
from tui.deps import GFX1151_MACHINE, builtin_deps
from tui.widgets.model_list import ModelList

REPO = "test-org/Qwen-hub-4bit"
PROFILE = "mlx-community/Qwen2.5-7B-Instruct-4bit"
FLAGS = ["--backend", "rocm", "--memory-limit", str(GFX1151_LIMIT), "--max-tokens", "8192"]


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A local Hub serving one repo; HF_ENDPOINT points at it, caches are this test's."""
    server = FakeHub().start()
    local = write_skeleton(load_profile(PROFILE), tmp_path / "published", layout="headers")
    server.add(REPO, sparse_from_folder(local))
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


def rows(app: VramscopeApp) -> list[str]:
    options = app.screen.query_one(ModelList).query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


def inspect_total(capsys: pytest.CaptureFixture[str]) -> int:
    assert main(["inspect", REPO, "--json", *FLAGS]) == 0
    return int(json.loads(capsys.readouterr().out)["total_bytes"])


async def test_a_typed_repo_id_is_read_from_the_hub_listed_as_hub_and_kept(
    hub: FakeHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = hub_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        models = app.screen.query_one(ModelList)
        assert not any(e.name == REPO for e in models.entries)
        hub.hold()  # the read stays in flight until released
        await type_keys(pilot, "/" + REPO)
        assert rows(app)[0] == f"↓ read {REPO} from the Hub (Enter)"
        await type_keys(pilot, "\r")  # Enter reads, on a worker thread
        assert rows(app)[0] == f"… reading {REPO} from the Hub"
        assert models.query_one(OptionList).highlighted is None  # Enter again picks nothing
        await wait_for(pilot, lambda: f"Reading {REPO}" in breakdown_text(app), "reading…")
        await type_keys(pilot, "\x1bk")  # keys land while it runs
        assert rows(app)[0] == f"… reading {REPO} from the Hub"
        assert app.explorer.state.kv_int8  # the UI thread was free for the key
        await type_keys(pilot, "k")
        hub.release()
        await wait_for(pilot, lambda: "Total estimate" in breakdown_bytes(app), "the estimate")
        await settle(pilot)
        listed = [e for e in models.entries if e.name == REPO]
        assert [e.origin for e in listed] == [ORIGIN_HUB]
        hub_rows = [r for r in rows(app) if REPO.split("/")[1] in r]
        assert any(r.rstrip().endswith("hub") for r in rows(app))
        assert hub_rows and hub_rows[0].startswith("● ")  # the model on screen
        total = breakdown_bytes(app)["Total estimate"]
    assert total == inspect_total(capsys)

    # Restarted with the Hub off: listed and read from the store, no request made.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    asked = len(hub.requests)
    app = hub_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        models = app.screen.query_one(ModelList)
        assert [e.origin for e in models.entries if e.name == REPO] == [ORIGIN_HUB]
        await type_keys(pilot, "/" + REPO)
        assert not rows(app)[0].startswith("↓ read")  # listed: picked, not read again
        await type_keys(pilot, "\r")
        await wait_for(pilot, lambda: "Total estimate" in breakdown_bytes(app), "the estimate")
        await settle(pilot)
        assert app.explorer.state.model == REPO
        assert breakdown_bytes(app)["Total estimate"] == total
    assert len(hub.requests) == asked


async def test_a_read_the_hub_refuses_is_its_one_line_reason(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = hub_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await type_keys(pilot, "/test-org/nothing-here\r")
        await wait_for(pilot, lambda: rows(app)[1].startswith("✗"), "the failure")
        reason = rows(app)[1]
        assert "test-org/nothing-here" in reason and "\n" not in reason
        assert app.explorer.loader.problem  # and the breakdown says it in place
        # Offline, a repo never read: the reason names the switch.
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        await type_keys(pilot, "\x1b/")
        await wait_for(pilot, lambda: rows(app)[0].startswith("↓ read"), "the offer again")
        await type_keys(pilot, "\r")
        await wait_for(pilot, lambda: "HF_HUB_OFFLINE=1" in rows(app)[1], "the offline reason")
        assert app.is_running


async def test_m_on_a_hub_model_prefills_its_repo_id_and_says_why(
    hub: FakeHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Hub store holds headers only, which mlx_lm cannot load: `M`'s command names
    the repo id (mlx_lm downloads it) and the box says so (#41)."""
    from textual.widgets import Input, Static

    from tui.screens.command_screen import CommandScreen

    inspect_total(capsys)  # read once from the Hub: now in the store
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    deps = builtin_deps(AvailableMemory(GFX1151_LIMIT, "test"), GFX1151_MACHINE, hub=True)
    app = build_app(deps, backend=Backend.ROCM, memory_limit=GFX1151_LIMIT, model=REPO)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.explorer.loader.entry is not None
        assert app.explorer.loader.entry.origin == ORIGIN_HUB
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandScreen), "the command box")
        command = app.screen.query_one(Input).value
        assert command == f"python -m mlx_lm generate --model {REPO} --max-tokens 8192"
        said = str(app.screen.query_one("#command-report", Static).render())
        assert f"{REPO} is read from the Hub" in said and "mlx_lm downloads" in said
