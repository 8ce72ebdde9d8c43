"""The explorer's `M`: your own command, run, sampled and held against the model on
screen, as `vramscope run` does (#27 item 1)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static

from tests.tui.helpers import LLAMA, build_app, fixed_deps, settle, wait_for, widget_lines
from tui.app import VramscopeApp
from tui.screens.command_screen import CommandScreen
from tui.widgets.measured_panel import MeasuredPanel


async def open_box(pilot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> VramscopeApp:
    """The explorer with its history in `tmp_path`, settled, `M`'s box open."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app: VramscopeApp = pilot.app
    await settle(pilot)
    await pilot.press("M")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandScreen), "the command box")
    return app


def report(app: object) -> str:
    screen = app.screen  # type: ignore[attr-defined]
    return str(screen.query_one("#command-report", Static).render())


async def test_m_runs_your_command_beside_the_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with build_app(fixed_deps(), preset="gfx1151").run_test(size=(160, 48)) as pilot:
        app = await open_box(pilot, tmp_path, monkeypatch)
        box = app.screen.query_one(Input)
        assert box.value.startswith("python -m mlx_lm generate --model ")  # a suggestion
        box.value = f"{sys.executable} -c \"b = b'x' * 50_000_000; import time; time.sleep(0.5)\""
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Measured peak:" in report(app), "the peak")
        text = report(app)
        assert "Engine:         your command" in text and "Estimate:" in text
        assert "exit status 0" in text
        history = tmp_path / "vramscope" / "measurements.jsonl"
        record = json.loads(history.read_text())["result"]
        assert (record["engine"], record["model"]) == ("external", LLAMA)
        assert record["peak_bytes"] > 50_000_000 and record["estimate_bytes"] > 0
        await pilot.press("escape")  # closes the box: the peak is beside the estimate
        await wait_for(pilot, lambda: not isinstance(app.screen, CommandScreen), "closed")
        panel = app.explorer.query_one(MeasuredPanel)
        await wait_for(pilot, lambda: panel.kind == "result", "the result in the panel")


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


async def test_escape_kills_a_command_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with build_app(fixed_deps(), preset="gfx1151").run_test(size=(160, 48)) as pilot:
        app = await open_box(pilot, tmp_path, monkeypatch)
        app.screen.query_one(Input).value = f'{sys.executable} -c "import time; time.sleep(60)"'
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, CommandScreen)
        await wait_for(pilot, lambda: bool(screen._group), "the command to start")
        group = screen._group
        assert group
        await pilot.press("escape")
        await wait_for(pilot, lambda: "cancelled" in report(app), "killed")
        # Killed, and gone once reaped: the command's process was the holder's child, and
        # init (which reaps it once the holder is dead) can take a moment under load.
        await wait_for(pilot, lambda: not group_alive(group), "the group gone", limit_s=10)
        assert not (tmp_path / "vramscope" / "measurements.jsonl").exists()  # not a run


async def test_w_offers_your_command_beside_the_two_engines_and_m_asks_for_it() -> None:
    from core.measurement.engine import Engine

    async with build_app(fixed_deps(), preset="gfx1151").run_test(size=(160, 48)) as pilot:
        app: VramscopeApp = pilot.app
        await settle(pilot)
        seen = [app.explorer.state.engine]
        for _ in range(3):
            await pilot.press("w")
            await settle(pilot)
            seen.append(app.explorer.state.engine)
        assert seen == [Engine.TORCH, Engine.MLX, Engine.EXTERNAL, Engine.TORCH]
        await pilot.press("w", "w")
        await settle(pilot)
        assert "your command" in " ".join(widget_lines(app.explorer.query_one("#engine")))
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandScreen), "the command box")
        assert app.screen.query_one(Input).value.startswith("python -m mlx_lm generate")
        assert not app.explorer.measure.running  # no engine run started beside it
