"""The explorer's "This device · total / free" choices, over the recorded gfx1151 APU tree."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from textual.widgets import OptionList, Select

from core.backend import Backend
from core.device import reading
from core.device.reading import read_device_memory
from core.device_memory import DeviceMemory
from core.units import GIB
from tests.tui.helpers import (
    ROCM_MACHINE,
    breakdown_bytes,
    breakdown_text,
    build_app,
    fixed_deps,
    settle,
)
from tui.cli import main
from tui.widgets.command_lines_view import CommandLinesView
from tui.widgets.status_line import StatusLine

DATA = Path(__file__).parents[1] / "core" / "device" / "data" / "gfx1151-apu"
QWEN = "Qwen/Qwen2.5-7B-Instruct"


def picker_labels(select: Select[str]) -> list[str]:
    """What the memory picker lists, read off its drop-down (an OptionList)."""
    options = select.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


def apu_device() -> DeviceMemory:
    device = read_device_memory(
        Backend.ROCM, sys_root=DATA / "sys", proc_root=DATA / "proc", mlx=lambda: None
    )
    assert device is not None
    return device


@pytest.mark.parametrize(
    ("downs", "which", "expected"), [(1, "total", int(96 * GIB * 0.8)), (2, "free", 66 * GIB)]
)
async def test_picking_this_device_s_free_or_total(
    downs: int,
    which: str,
    expected: int,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deps = fixed_deps(ROCM_MACHINE, read_device=lambda backend: apu_device())
    app = build_app(deps, model=QWEN)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        select = app.explorer.query_one("#memory Select", Select)
        labels = picker_labels(select)  # what the picker lists
        await pilot.press("a", "enter", *(["down"] * downs), "enter")
        await settle(pilot)
        shown = breakdown_bytes(app)
        status = app.explorer.query_one(StatusLine).text
        command = app.explorer.query_one("#commands", CommandLinesView).vramscope
    assert any("total 96.00 GiB" in label and "gfx1151" in label for label in labels)
    assert any("free 66.00 GiB, 30.00 GiB used" in label for label in labels)
    assert shown["Available"] == expected
    assert "gfx1151" in status
    # The command line reads the device again, as the screen did: the same total.
    assert f"--memory-limit {which}" in command
    monkeypatch.setattr(reading, "SYS_ROOT", DATA / "sys")
    monkeypatch.setattr(reading, "PROC_ROOT", DATA / "proc")
    assert main([*shlex.split(command)[1:], "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["budget_bytes"] == expected
    assert report["total_bytes"] == shown["Total estimate"]


async def test_no_device_reading_says_so_in_the_picker() -> None:
    app = build_app(fixed_deps(read_device=lambda backend: None))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        select = app.explorer.query_one("#memory Select", Select)
        labels = picker_labels(select)
        app.explorer.update(memory=app.explorer.state.memory.__class__("device-free"))
        await settle(pilot)
        shown = breakdown_bytes(app)
        text = breakdown_text(app)
    assert any("no device memory is readable" in label for label in labels)
    assert "Available" not in shown  # no number is made up
    assert "This device's memory: no device memory is readable" in text
