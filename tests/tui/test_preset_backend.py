"""A preset in the explorer selects its card's backend (unless --backend was given), and
the vramscope command line says `--preset NAME`, which `inspect` reads to the same total."""

from __future__ import annotations

import json
import shlex

import pytest
from textual.widgets import Select

from core.backend import Backend
from tests.tui.helpers import breakdown_bytes, build_app, handled, settle, widget_lines
from tui.app import VramscopeApp
from tui.cli import main
from tui.widgets.command_lines_view import CommandLinesView
from tui.widgets.memory_field import MemoryField
from tui.widgets.status_line import StatusLine


def vramscope_line(app: VramscopeApp) -> str:
    return app.screen.query_one("#commands", CommandLinesView).vramscope


async def pick(app: VramscopeApp, key: str) -> None:
    select: Select[str] = app.screen.query_one(MemoryField).query_one(Select)
    select.value = key  # what choosing the row in the open picker does


async def test_rtx4090_starts_on_cuda_and_its_command_line_gives_the_same_total(capsys) -> None:
    app = build_app(preset="rtx4090")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.explorer.state.backend is Backend.CUDA
        status = widget_lines(app.screen.query_one(StatusLine))[0]
        assert "CUDA · the GeForce RTX 4090 24 GiB preset" in status
        rows = breakdown_bytes(app)
        assert "Backend in-flight" not in rows
        line = vramscope_line(app)
    words = shlex.split(line)
    assert words[-4:] == ["--backend", "cuda", "--preset", "rtx4090"]
    assert "--inflight-mb" not in words and "--memory-limit" not in words
    assert main([*words[1:], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total_bytes"] == rows["Total estimate"]
    assert data["budget_bytes"] == rows["Available"]


async def test_an_explicit_backend_is_kept_with_an_nvidia_preset() -> None:
    app = build_app(preset="rtx4090", backend=Backend.ROCM)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.explorer.state.backend is Backend.ROCM
        assert breakdown_bytes(app)["Backend in-flight"] == 1 << 30
        await pick(app, "h100")
        await handled(pilot)
        assert app.explorer.state.backend is Backend.ROCM  # --backend rocm was given
        assert "--backend rocm --inflight-mb 1024 --preset h100" in vramscope_line(app)


@pytest.mark.parametrize(("key", "backend"), [("h100", Backend.CUDA), ("w7900", Backend.ROCM)])
async def test_picking_a_preset_selects_its_cards_backend(key: str, backend: Backend) -> None:
    app = build_app(preset="apple-64")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.explorer.state.backend is Backend.METAL
        await pick(app, key)
        await handled(pilot)
        assert app.explorer.state.backend is backend
        assert f"--backend {backend.value}" in vramscope_line(app)
        assert vramscope_line(app).endswith(f"--preset {key}")
