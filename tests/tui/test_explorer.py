"""The explorer driven through its Pilot: what a user sees when they move the controls."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest

from core.answer.solve import largest_fitting_context
from core.backend import Backend
from core.catalog.profiles import load_profile, profile_snapshot
from core.estimate.available import AvailableMemory
from core.estimate.estimate import Workload, estimate
from core.estimate.report import format_estimate
from core.units import MIB
from tests.tui.helpers import (
    GFX1151_LIMIT,
    LLAMA,
    NO_GPU,
    ROCM_MACHINE,
    breakdown_bytes,
    breakdown_text,
    build_app,
    fixed_deps,
    settle,
    widget_lines,
)
from tui.cli import main
from tui.model.state import ExplorerState, MemoryChoice
from tui.widgets.command_lines_view import CommandLinesView
from tui.widgets.slider_field import SliderField
from tui.widgets.status_line import StatusLine

INFLIGHT = "Backend in-flight"


def hint_text(field: SliderField) -> str:
    """The hint line under a control, as painted ("" when hidden)."""
    hint = field.query_one(".field-hint")
    return " ".join(widget_lines(hint)).strip() if hint.display else ""


TOTAL = "Total estimate"


_BANNER_ROW = re.compile(
    r"^  (?P<label>[A-Za-z][A-Za-z -]*):\s+(?:.*?\((?P<big>\d+) bytes\)|(?P<small>\d+) bytes)"
)


def banner_bytes(banner: str) -> dict[str, int]:
    """Label -> bytes from mlxcel's text banner."""
    out = {}
    for line in banner.splitlines():
        m = _BANNER_ROW.match(line)
        if m:
            out[m.group("label")] = int(m.group("big") or m.group("small"))
    return out


async def test_default_screen_matches_the_text_banner_byte_for_byte() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        shown = breakdown_bytes(app)
        state = app.explorer.state
        available = app.explorer.available
        assert available is not None
        est = estimate(profile_snapshot(load_profile(LLAMA)), Workload(), state.settings(available))
        banner = banner_bytes(format_estimate(LLAMA, est))
        assert shown == {
            "Weights": banner["Weights"],
            "KV cache": banner["KV cache"],
            "Activation": banner["Activation"],
            "Allocator ovhd": banner["Allocator ovhd"],
            INFLIGHT: banner["Backend in-flight"],
            TOTAL: banner["Total estimate"],
            "Available": banner["Available"],
        }
        assert shown[INFLIGHT] == 1024 * MIB
        assert shown["Available"] == GFX1151_LIMIT
        text = breakdown_text(app)
        assert "FITS" in text
        assert f"({est.slack_bytes:,} bytes) free" in text


async def test_budget_slider_moves_the_inflight_row_and_the_total_by_the_difference() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        default = breakdown_bytes(app)
        assert default[INFLIGHT] == 1024 * MIB
        await pilot.press("i", "left", "left", "left")  # 1024 -> 768 -> 512 -> 256
        at_256 = breakdown_bytes(app)
        assert at_256[INFLIGHT] == 256 * MIB
        assert default[TOTAL] - at_256[TOTAL] == (1024 - 256) * MIB
        await pilot.press("right", "right", "right", "right", "right", "right", "right")
        at_4096 = breakdown_bytes(app)
        assert at_4096[INFLIGHT] == 4096 * MIB
        assert at_4096[TOTAL] - default[TOTAL] == (4096 - 1024) * MIB
        for key in ("Weights", "KV cache", "Activation", "Allocator ovhd", "Available"):
            assert default[key] == at_256[key] == at_4096[key]
        field = app.screen.query_one("#inflight", SliderField)
        assert field.input.value == "4096"


async def test_budget_zero_shows_no_row_and_says_it_is_off() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        default = breakdown_bytes(app)
        await pilot.press("i", "home")
        await pilot.pause()
        rows = breakdown_bytes(app)
        assert INFLIGHT not in rows
        assert default[TOTAL] - rows[TOTAL] == 1024 * MIB
        assert hint_text(app.screen.query_one("#inflight", SliderField)) == (
            "off: unbounded in-flight set, not modelled"
        )


async def test_other_backends_show_no_row_and_an_inactive_budget() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        rocm_total = breakdown_bytes(app)[TOTAL]
        field = app.screen.query_one("#inflight", SliderField)
        for expected in (Backend.CUDA, Backend.METAL, Backend.CPU):
            await pilot.press("n")
            await pilot.pause()
            assert app.explorer.state.backend is expected
            rows = breakdown_bytes(app)
            assert INFLIGHT not in rows
            assert rocm_total - rows[TOTAL] == 1024 * MIB
            assert field.disabled
            assert hint_text(field) == "inactive: only ROCm builds reserve it"
        await pilot.press("n")
        assert app.explorer.state.backend is Backend.ROCM
        assert breakdown_bytes(app)[INFLIGHT] == 1024 * MIB
        assert not field.disabled


async def test_int8_halves_the_kv_row() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        fp16 = breakdown_bytes(app)["KV cache"]
        await pilot.press("k")
        int8 = breakdown_bytes(app)["KV cache"]
        assert fp16 == 2 * int8
        assert "int8" in app.screen.query_one(CommandLinesView).vramscope


async def test_typing_an_exact_context_estimates_at_that_context() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("t", "5", "0", "0", "0", "enter")
        assert app.explorer.state.max_tokens == 5000
        est = app.explorer.estimate
        assert est is not None
        # KV rounds the context up to the next 256-token step: 5120 tokens at 128 KiB.
        assert breakdown_bytes(app)["KV cache"] == 5120 * 131072 == est.kv_bytes
        assert app.screen.query_one("#tokens", SliderField).input.value == "5000"


async def test_an_invalid_typed_value_is_marked_and_changes_nothing() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        before = breakdown_bytes(app)
        await pilot.press("i", "1", "x")
        field = app.screen.query_one("#inflight", SliderField)
        box = field.input
        assert box.has_class("-invalid")
        # "1" was a live preview; "1x" is not a value, so the value from before typing stands.
        assert app.explorer.state.inflight_mib == 1024
        assert field.typed_note == (
            "'x' is not a unit: use K, M, G or T (x1024), alone or with B or iB"
        )
        await pilot.press("enter")  # refused: the box keeps the text and says why
        assert field.typing and box.value == "1x"
        assert "Esc restores 1024" in field.typed_note
        await pilot.press("escape")
        assert box.value == "1024"
        assert not box.has_class("-invalid")
        await pilot.press("i", "end")
        assert breakdown_bytes(app)[INFLIGHT] == 8192 * MIB
        assert breakdown_bytes(app)["Weights"] == before["Weights"]


async def test_largest_context_line_is_the_solver_boundary() -> None:
    app = build_app(preset="rx7900xtx")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        screen = app.explorer
        assert screen.loader.snapshot is not None
        available = screen.available
        assert available is not None
        limit = largest_fitting_context(
            screen.loader.snapshot, screen.state.workload(), screen.state.settings(available)
        )
        assert limit.value is not None
        text = " ".join(breakdown_text(app).split())
        # The load's largest context first (#38), mlxcel's solver boundary beside it.
        assert f"by mlxcel's estimate: {limit.value:,} tokens" in text


async def test_does_not_fit_shows_the_overflow() -> None:
    app = build_app(preset="rx7900xtx")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("t", "end")
        assert app.explorer.state.max_tokens == 131072
        est = app.explorer.estimate
        assert est is not None
        assert not est.fits
        assert "DOES NOT FIT   " in breakdown_text(app)
        assert f"({est.overflow_bytes:,} bytes) over" in breakdown_text(app)


async def test_the_vramscope_command_line_prints_the_same_total(capsys) -> None:
    app = build_app(preset="gfx1151", max_tokens=5000)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("i", "left", "k")  # 768 MiB, int8 KV
        total = breakdown_bytes(app)[TOTAL]
        command = app.screen.query_one(CommandLinesView).vramscope
    words = shlex.split(command)
    assert words[:3] == ["vramscope", "inspect", LLAMA]
    assert main(words[1:]) == 0
    assert banner_bytes(capsys.readouterr().out)["Total estimate"] == total


async def test_mlxcel_command_line_carries_the_budget_only_on_rocm() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        view = app.screen.query_one(CommandLinesView)
        assert view.mlxcel == (
            f"MLX_ROCM_MAX_INFLIGHT_MB=1024 MLXCEL_MEMORY_LIMIT={GFX1151_LIMIT} "
            f"mlxcel inspect -m {LLAMA} --max-tokens 8192"
        )
        await pilot.press("n")
        assert view.mlxcel.startswith(f"MLXCEL_MEMORY_LIMIT={GFX1151_LIMIT} mlxcel inspect")


async def test_with_no_gpu_the_explorer_answers_for_the_cpu_as_inspect_does() -> None:
    app = build_app(fixed_deps(machine=NO_GPU))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        status = widget_lines(app.screen.query_one(StatusLine))[0]
        assert "CPU · no GPU found" in status
        assert "32.00 GiB available · /proc/meminfo" in status
        assert INFLIGHT not in breakdown_bytes(app)  # the CPU reserves none
        await pilot.press("n")  # the next backend after the CPU: ROCm, chosen
        status = widget_lines(app.screen.query_one(StatusLine))[0]
        assert "ROCm · chosen (this machine: no GPU found)" in status
        assert breakdown_bytes(app)[INFLIGHT] == 1024 * MIB


async def test_header_says_detected_on_a_rocm_machine() -> None:
    app = build_app(fixed_deps(machine=ROCM_MACHINE))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        status = widget_lines(app.screen.query_one(StatusLine))[0]
        assert "ROCm · detected: /dev/kfd (AMD KFD) present" in status


async def test_environment_sets_the_starting_values() -> None:
    env = {"MLX_ROCM_MAX_INFLIGHT_MB": "2048", "MLXCEL_HEADROOM_FACTOR": "1.5"}
    app = build_app(fixed_deps(env=env), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.explorer.state.inflight_mib == 2048
        assert app.explorer.state.headroom_factor == 1.5
        assert breakdown_bytes(app)[INFLIGHT] == 2048 * MIB
        assert "factor 1.50x on weights+kv" in breakdown_text(app)


async def test_typed_available_memory_and_presets() -> None:
    app = build_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert breakdown_bytes(app)["Available"] == 32 * 1024**3
        app.explorer.update(memory=MemoryChoice("mi300x"))
        await pilot.pause()
        assert breakdown_bytes(app)["Available"] == int(192 * 1024**3 * 0.8)
        await pilot.press("a", "tab", "2", "4", "G", "B")  # Tab selects the box's text
        assert app.explorer.state.memory.key == "custom"
        assert breakdown_bytes(app)["Available"] == 24 * 1024**3


def test_state_default_is_mlxcels_worked_example() -> None:
    state = ExplorerState()
    assert state.model == LLAMA
    assert state.max_tokens == 8192
    assert state.inflight_mib == 1024
    assert state.settings(AvailableMemory(1, "x")).backend_inflight_bytes == 1024 * MIB


async def test_memory_never_read_is_said_on_screen_not_turned_into_a_context() -> None:
    """mlxcel's walk found nothing (/proc hidden): the breakdown says so in its warning
    line, and the largest context is not answered (not "none fits")."""
    unread = AvailableMemory(0, "nothing detected", unread="/proc/meminfo cannot be read")
    app = build_app(fixed_deps(machine=NO_GPU, available=unread))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        text = " ".join(breakdown_text(app).split())
        assert "⚠ available memory was not read (/proc/meminfo cannot be read)" in text
        assert "Largest context that fits not answered: available memory was not read" in text
        assert "does not fit even with an empty context" not in text


@pytest.mark.parametrize("options", [{"preset": "gfx1151"}, {"memory_limit": 48 * 2**30}])
async def test_starting_changes_no_setting(
    options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The memory box and picker post their own values as they are made; read as typed,
    # they turned a preset into a typed size and back while the body mounted.
    from tui.screens.explorer_screen import ExplorerScreen

    states: list[ExplorerState] = []
    watch = ExplorerScreen.watch_state

    def seen(screen: ExplorerScreen, old: ExplorerState, new: ExplorerState) -> None:
        states.append(new)
        watch(screen, old, new)

    monkeypatch.setattr(ExplorerScreen, "watch_state", seen)
    app = build_app(**options)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        start = app.explorer.state
        assert states == []
        await pilot.press("right")  # a key still changes the state, and is seen here
        await settle(pilot)
        assert [s.max_tokens for s in states] == [app.explorer.state.max_tokens]
        assert app.explorer.state.max_tokens != start.max_tokens
        assert app.explorer.state.memory == start.memory
