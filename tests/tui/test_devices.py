"""The Devices control: a split MLX load, one column per rank, through the real app."""

from __future__ import annotations

from typing import Any

from core.catalog.profiles import load_profile, profile_snapshot
from core.parallel.sharding import ParallelKind
from tests.tui.helpers import (
    LLAMA,
    build_app,
    displayed,
    settle,
    settle_then,
    type_keys,
    widget_lines,
)
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
        assert not displayed(app.screen, "#devices-row")
        await pilot.press("d")
        await settle(pilot)
        assert app.screen.state.devices == 2
        assert panel.display and displayed(app.screen, "#devices-row")
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
        app.screen.update(devices=2, split=ParallelKind.PIPELINE)
        await settle(pilot)
        text = "\n".join(widget_lines(app.screen.query_one(RanksPanel)))
        assert "has no model.pipeline()" in text
        assert app.screen.query_one(Controls).state.split is ParallelKind.PIPELINE


async def test_largest_context_for_the_plan_fits_and_one_more_does_not() -> None:
    from dataclasses import replace

    from core.parallel.plan import ParallelPlan, estimate_parallel
    from core.parallel.sharding import ParallelKind

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


async def test_uneven_devices_rank_1_does_not_fit_its_smaller_card() -> None:
    """Typed in the Devices row, `24GB,2GB` gives rank 0 a 24 GiB card and rank 1 a 2 GiB
    one: the table, the plan's verdict, the summary line and `--memory-limit` follow."""
    from core.memory_size import parse_memory_size
    from core.parallel.plan import ParallelPlan, estimate_parallel
    from core.parallel.sharding import ParallelKind
    from core.units import format_bytes_short
    from tui.widgets.status_line import SummaryLine

    app = build_app(preset="rx7900xtx", max_tokens=4096)
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        panel = app.screen.query_one(RanksPanel)
        assert "PLAN FITS: all 2 ranks" in "\n".join(widget_lines(panel))
        await pilot.click("#device-memory")
        await type_keys(pilot, "24GB,2GB")
        await settle(pilot)
        text = "\n".join(widget_lines(panel))
        state, available = app.screen.state, app.screen.available
        summary = app.screen.query_one(SummaryLine).summary
        lines = app.screen.query_one("#commands", CommandLinesView)
        vramscope_line = lines.vramscope
    assert state.device_memory == "24GB,2GB"
    assert available is not None
    profile = load_profile(LLAMA)
    assert profile.tensors is not None
    limits = [parse_memory_size("24GB"), parse_memory_size("2GB")]
    pe = estimate_parallel(
        profile_snapshot(profile),
        profile.tensors,
        ParallelPlan(ParallelKind.TENSOR, 2),
        state.workload(),
        state.settings(available),
        limits,
    )
    rank0, rank1 = pe.ranks
    assert rank0.fits and not rank1.fits  # what the panel must say, computed independently
    assert "PLAN DOES NOT FIT: rank 1" in text
    available_row = next(line for line in text.splitlines() if "Available" in line)
    shown = [format_bytes_short(b) for b in limits]  # mlxcel's grammar: GB = 2^30 bytes
    assert available_row.split()[1:] == ["24.00", "GiB", "2.00", "GiB"] == " ".join(shown).split()
    verdict_row = next(line for line in text.splitlines() if "Verdict" in line)
    assert "FITS" in verdict_row and "OVER" in verdict_row
    assert verdict_row.index("FITS") < verdict_row.index("OVER")  # rank 0 fits, rank 1 not
    assert summary is not None and summary.verdict == "PLAN DOES NOT FIT"
    assert summary.fits is False and f"of {shown[1]}" in summary.detail  # rank 1, the tight one
    assert vramscope_line.endswith("--memory-limit 24GB,2GB --tp 2")


async def test_a_bad_per_device_list_is_said_in_place() -> None:
    app = build_app(preset="rx7900xtx", max_tokens=4096)
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(RanksPanel)
        app.screen.update(devices=2, device_memory="24GB,lots")
        await settle(pilot)
        bad_size = " ".join(widget_lines(panel))
        app.screen.update(device_memory="24GB,16GB,8GB")
        await settle(pilot)
        three = " ".join(widget_lines(panel))
        summary = app.screen.query_one("SummaryLine").summary  # type: ignore[attr-defined]
        app.screen.update(device_memory="")
        await settle(pilot)
        blank = " ".join(widget_lines(panel))
        box_value = app.screen.query_one("#device-memory").value  # type: ignore[attr-defined]
    assert "per-device memory: 'lots' is not a size" in bad_size
    assert "per-device memory: 3 sizes for 2 ranks" in three
    assert summary.fits is not True and "3 sizes for 2 ranks" in summary.detail
    assert "PLAN FITS: all 2 ranks" in blank  # blank: the Available value on every rank
    assert box_value == ""


async def test_a_per_device_list_that_does_not_read_is_marked_in_its_box() -> None:
    """Like every typed entry, the Per device box turns red (`-invalid`) while its text
    does not read, and back when it does; the reason stays in the ranks panel."""
    from textual.color import Color
    from textual.widgets import Input

    app = build_app(preset="rx7900xtx", max_tokens=4096)
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        box = app.screen.query_one("#device-memory", Input)
        error = Color.parse(app.theme_variables["error"])
        assert not box.has_class("-invalid")  # blank: Available on every device
        await pilot.click("#device-memory")
        await type_keys(pilot, "24GB,lots")
        bad = box.has_class("-invalid"), box.styles.color
        panel = " ".join(widget_lines(app.screen.query_one(RanksPanel)))
        await pilot.press(*["backspace"] * 4)
        await type_keys(pilot, "2GB")
        fixed = box.has_class("-invalid"), box.styles.color
        await type_keys(pilot, ",8GB")  # three sizes for two ranks
        three = box.has_class("-invalid")
        await pilot.press("escape")
        await type_keys(pilot, "ddddddd")  # 2 -> ... -> 8 -> 1
        one_device = app.screen.state.devices, box.has_class("-invalid")
    assert bad == (True, error)
    assert "per-device memory: 'lots' is not a size" in panel
    assert fixed[0] is False and fixed[1] != error
    assert three is True
    assert one_device == (1, False)  # one device: the list is not used
