"""The explorer's `M`: your own command, run, sampled and held against the model on
screen, as `vramscope run` does (#27 item 1)."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static

from hip_backend.external.tree import cgroup2_dir
from tests.tui.helpers import LLAMA, build_app, fixed_deps, settle, wait_for, widget_lines
from tui.app import VramscopeApp
from tui.model.measure_state import PanelKind
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
        await wait_for(pilot, lambda: panel.kind is PanelKind.RESULT, "the result in the panel")


SETSID_COMMAND = (
    "import os, subprocess, sys, time\n"
    "child = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
    "open(sys.argv[1], 'w').write(f'{os.getpid()} {child.pid}')\n"
    "time.sleep(60)\n"
)


def command_box_line(pids_file: Path) -> str:
    """A command that starts a `setsid` child, writes both pids, and sleeps."""
    return shlex.join([sys.executable, "-c", SETSID_COMMAND, str(pids_file)])


def pids_in(path: Path) -> list[int]:
    text = path.read_text() if path.exists() else ""
    return [int(p) for p in text.split()] if len(text.split()) == 2 else []


def alive(pid: int) -> bool:
    """Running (a zombie waits for init to reap it: it runs nothing and holds nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


async def test_escape_kills_a_command_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids_file = tmp_path / "pids"
    async with build_app(fixed_deps(), preset="gfx1151").run_test(size=(160, 48)) as pilot:
        app = await open_box(pilot, tmp_path, monkeypatch)
        app.screen.query_one(Input).value = command_box_line(pids_file)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(pids_in(pids_file)), "the command to start", 30)
        pids = pids_in(pids_file)
        assert all(alive(p) for p in pids)
        await pilot.press("escape")
        await wait_for(pilot, lambda: "cancelled" in report(app), "killed")
        # The command and its setsid child are gone (killed, then reaped by init).
        await wait_for(pilot, lambda: not any(map(alive, pids)), "both gone", limit_s=10)
        assert not (tmp_path / "vramscope" / "measurements.jsonl").exists()  # not a run


async def test_quitting_after_m_kills_the_command_and_its_setsid_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids_file = tmp_path / "pids"
    async with build_app(fixed_deps(), preset="gfx1151").run_test(size=(160, 48)) as pilot:
        app = await open_box(pilot, tmp_path, monkeypatch)
        app.screen.query_one(Input).value = command_box_line(pids_file)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(pids_in(pids_file)), "the command to start", 30)
        pids = pids_in(pids_file)
        app.exit()
    deadline = time.monotonic() + 10
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if alive(p)] == []
    # Quitting waited for the run's end: its cgroup (where one was made) is removed.
    parent = cgroup2_dir()
    assert parent is None or list(parent.glob(f"vramscope-run-{os.getpid()}-*")) == []


async def test_a_program_that_is_not_there_is_said_in_the_box(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with build_app(fixed_deps(), preset="gfx1151").run_test(size=(160, 48)) as pilot:
        app = await open_box(pilot, tmp_path, monkeypatch)
        app.screen.query_one(Input).value = "no-such-program-vramscope --flag"
        await pilot.press("enter")
        await wait_for(pilot, lambda: "not a program on PATH" in report(app), "the refusal")
        assert "'no-such-program-vramscope'" in report(app)
        await pilot.press("escape")  # no run in flight: the box closes
        await wait_for(pilot, lambda: not isinstance(app.screen, CommandScreen), "closed")


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
