"""The Devices control: a split MLX load, one column per rank, through the real app."""

from __future__ import annotations

from typing import Any

from core.profiles import load_profile, profile_snapshot
from tests.tui.helpers import LLAMA, build_app, settle, settle_then, widget_lines
from tui.widgets.command_lines_view import CommandLinesView
from tui.widgets.controls import Controls
from tui.widgets.ranks_panel import RanksPanel

MEDIUM = (120, 40)


async def test_d_splits_over_two_devices_one_column_per_rank() -> None:
    app = build_app(preset="rx7900xtx", max_tokens=4096)
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(RanksPanel)
        assert not panel.display  # one device: nothing shown
        assert not app.screen.query_one("#devices-row").display
        await pilot.press("d")
        await settle(pilot)
        assert app.screen.state.devices == 2
        assert panel.display and app.screen.query_one("#devices-row").display
        text = "\n".join(widget_lines(panel))
        assert "Rank 0" in text and "Rank 1" in text
        assert "PLAN FITS: all 2 ranks" in text
        # 8 KV heads over 2 ranks: each caches 4, half the single-device KV.
        assert "4 KV heads" in text
        single_kv = 536_870_912  # 32 layers x 2 x 8 x 128 x 2 B x 4096
        assert f"{single_kv // 2 / (1 << 20):.1f} MiB" in text
        lines = app.screen.query_one("#commands", CommandLinesView)
        assert lines.vramscope.endswith("--tp 2")
        assert lines.mlxcel.startswith("mlx.launch --backend ring -n 2")


async def test_pipeline_on_llama_is_refused_in_place() -> None:
    app = build_app(preset="rx7900xtx")
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot)
        app.screen.update(devices=2, split="pp")
        await settle(pilot)
        text = "\n".join(widget_lines(app.screen.query_one(RanksPanel)))
        assert "has no model.pipeline()" in text
        assert app.screen.query_one(Controls).state.split == "pp"


async def test_largest_context_for_the_plan_fits_and_one_more_does_not() -> None:
    from dataclasses import replace

    from core.parallel import ParallelPlan, estimate_parallel
    from core.sharding import ParallelKind

    app = build_app(preset="rx7900xtx")
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot)
        app.screen.update(devices=2)
        await settle(pilot)
        text = " ".join(widget_lines(app.screen.query_one(RanksPanel)))
        state, available = app.screen.state, app.screen.available
    assert available is not None
    shown = text.split("largest context that fits the plan: ")[1].split(" tokens")[0]
    largest = int(shown.replace(",", ""))
    profile = load_profile(LLAMA)
    assert profile.tensors is not None
    plan = ParallelPlan(ParallelKind.TENSOR, 2)

    def fits(tokens: int) -> bool:
        workload = replace(state.workload(), max_tokens=tokens)
        model = profile_snapshot(profile)
        assert profile.tensors is not None
        return estimate_parallel(
            model, profile.tensors, plan, workload, state.settings(available)
        ).fits

    assert fits(largest)
    assert largest == 131_072 or not fits(largest + 1)


def test_snapshot_two_devices(snap_compare: Any) -> None:
    """Devices = 2 (TP) on two 24 GiB cards: a column per rank, the plan's verdict."""
    app = build_app(preset="rx7900xtx", max_tokens=4096)
    assert snap_compare(app, terminal_size=(160, 48), run_before=settle_then("d"))


async def test_the_summary_line_answers_for_the_plan_not_one_device() -> None:
    """At 131,072 tokens the 8B model does not fit one 24 GiB card but fits two under TP:
    with two devices the line that stays in view at every size says so for the plan."""
    from tui.widgets.status_line import SummaryLine

    app = build_app(preset="rx7900xtx", max_tokens=131_072)
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        line = app.screen.query_one(SummaryLine)
        assert line.summary is not None
        assert line.summary.verdict == "DOES NOT FIT"
        await pilot.press("d")
        await settle(pilot)
        panel = " ".join(widget_lines(app.screen.query_one(RanksPanel)))
        summary = line.summary
    assert "PLAN FITS: all 2 ranks" in panel
    assert summary.verdict == "PLAN FITS" and summary.fits is True
    assert "2×TP" in summary.detail and "fullest rank" in summary.detail
    assert summary.detail.startswith("2×TP · 131,072 tokens")
