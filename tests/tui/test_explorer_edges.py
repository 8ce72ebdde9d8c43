"""Issue #17's explorer rough edges, through Pilot on the real app: every key and control in
help, the footer and the palette; a measured result whose settings the screen left; the
chart's axis at 120x40; the summary's cut at 60x20."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from textual import events
from textual.binding import Binding
from textual.widgets import Input, OptionList, Static

from core.backend import Backend
from core.measurement.engine import Engine
from core.parallel.sharding import ParallelKind
from tests.factories import LLAMA, build_app, burst, peak
from tests.tui.helpers import footer_line, handled, settle, type_keys, wait_for, widget_lines
from tui.app import VramscopeApp, make_app
from tui.model.control_specs import CONTROLS
from tui.model.scales import MIN_TOKENS
from tui.model.state import LaunchOptions
from tui.render.chart import LABEL_WIDTH, point_columns, render_chart, sample_contexts
from tui.screens.explorer_screen import ExplorerScreen
from tui.screens.help_screen import HelpScreen
from tui.widgets.breakdown import Breakdown
from tui.widgets.context_chart import ContextChart
from tui.widgets.measured_panel import MeasuredPanel
from tui.widgets.status_line import SummaryLine

ISSUE_WORDS = ("devices", "tensor", "pipeline", "measure with", "overhead factor", "per device")


GGUF_KEYS = {s.key for s in CONTROLS if s.gguf_only}


def control_labels() -> list[str]:
    """Every control's label, the split's TP/PP included, and llama.cpp's left out (shown
    on a GGUF only: tests/tui/test_gguf_explorer.py). Its descriptor's: a row the state
    does not show is not in the panel yet, and tests/tui/test_control_specs.py holds the
    panel's painted labels to the descriptors'."""
    return [*(s.label for s in CONTROLS if not s.joins_row and not s.gguf_only), "TP/PP"]


def help_rows(app: VramscopeApp) -> list[str]:
    """The help's rows as painted, a wrapped description joined to its key's row."""
    rows: list[str] = []
    for static in app.screen.query(Static):
        for line in widget_lines(static):
            if line.startswith("   ") and rows:  # no key: the row above goes on
                rows[-1] += " " + line.strip()
            elif line.strip():
                rows.append(line.strip())
    return rows


async def palette_hits(app: VramscopeApp, pilot: object, words: str) -> list[str]:
    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    await pilot.press("ctrl+p")
    await handled(pilot)
    await type_keys(pilot, words)
    options = app.screen.query_one(OptionList)
    await wait_for(pilot, lambda: options.option_count > 0, f"palette hits for {words!r}")
    hits = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
    await pilot.press("escape")
    await handled(pilot)
    return hits


async def test_help_lists_every_binding_and_every_control() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot)
        labels = control_labels()
        assert {"Overhead factor", "Devices", "Per device", "Measure with"} <= set(labels)
        await pilot.press("question_mark")
        await handled(pilot)
        assert isinstance(app.screen, HelpScreen)
        rows = help_rows(app)
        for binding in ExplorerScreen.BINDINGS:
            assert isinstance(binding, Binding)
            if not binding.description:
                continue  # Escape's second binding (from a text box) has the first's row
            if binding.key in GGUF_KEYS:
                continue  # llama.cpp's: a GGUF's help (tests/tui/test_control_specs.py)
            key = app.get_key_display(binding).casefold()
            word = binding.description.split()[0].casefold()
            assert any(
                key in row.split("  ")[0].casefold().split() and word in row.casefold()
                for row in rows
            ), f"help has no row for {binding.key} ({binding.description})"
        for label in labels:
            assert any(row.split("  ")[0].strip() == label for row in rows), label


async def test_the_palette_finds_every_control_by_its_words() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        for words in (*ISSUE_WORDS, *(label.casefold() for label in control_labels())):
            hits = await palette_hits(app, pilot, words)
            first = hits[0].split("\n")[0].casefold()
            assert all(w in first for w in words.split("/")[0].split()), (words, hits[:3])
        # The entries do what they say.
        await palette_hits(app, pilot, "devices: 4")
        await pilot.press("ctrl+p")
        await type_keys(pilot, "devices: 4")
        await pilot.press("enter")
        await handled(pilot)
        assert app.explorer.state.devices == 4


async def test_the_new_keys_set_devices_split_engine_and_reach_per_device() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await type_keys(pilot, "p")  # one device: no Per device row, a notice says why
        assert not isinstance(app.screen.focused, Input)
        # d is a plain binding and p a priority one (a jump), which Textual alone would
        # run first: the Per device row is there only once d has been handled, and the
        # app holds p until then (tui/key_order.py).
        await type_keys(pilot, "dswp24GB\x1b")
        state = app.explorer.state
        assert (state.devices, state.split, state.engine) == (2, ParallelKind.PIPELINE, Engine.MLX)
        assert state.device_memory == "24GB"


def slow_s_on_the_slider(monkeypatch: pytest.MonkeyPatch, checks: int) -> None:
    """`s` on the token slider takes `checks` of the key order's hold checks to be
    handled: a process taken off the CPU, made sure of."""
    from tui.key_order import CHECK_S
    from tui.widgets.stop_slider import StopSlider

    real = StopSlider.on_key

    async def slow_s(slider: StopSlider, event: events.Key) -> None:
        if event.key == "s":
            await asyncio.sleep(CHECK_S * checks)
        real(slider, event)

    monkeypatch.setattr(StopSlider, "on_key", slow_s)


async def test_a_key_held_up_past_the_limit_loses_none_of_the_keys_typed_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What a loaded machine did to `dswp24GB`: `s` sat in the slider's queue past the
    # hold limit, so `w` was let go behind it; then the answer for `s` let `p` go too,
    # `p` (a priority jump) put focus in the Per device box before `w` had bubbled up,
    # and Textual does not run a screen's printable binding under a focused text box:
    # `w` was lost. An answer now lets go only the key it follows (tui/key_order.py).
    slow_s_on_the_slider(monkeypatch, 3)
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        keys = "dswp24GB\x1b"
        burst(app, keys)
        order = app.key_order
        await wait_for(pilot, lambda: order.taken == len(keys) and order.idle, "the keys")
        state = app.explorer.state
        assert (state.devices, state.split, state.engine) == (2, ParallelKind.PIPELINE, Engine.MLX)
        assert state.device_memory == "24GB"


async def test_a_hold_s_check_after_the_app_ended_drops_the_held_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Under load, the hold's check (a timer armed while keys waited) ran after the app
    # had taken its screens down, and read `app.screen`: ScreenStackError, and the
    # app ended with an error. A check that comes then lets nothing go.
    slow_s_on_the_slider(monkeypatch, 4)
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        burst(app, "sdd")
        order = app.key_order
        # Not `wait_for`: its pauses wait for the slow key itself.
        for _ in range(1000):
            if order.taken == 1 and not order.idle:
                break
            await asyncio.sleep(0.01)
        assert order.taken == 1 and not order.idle
        app.exit()
    assert app.screen_stack == [] and not order.idle
    await order.check_held()  # the timer's callback, as it came
    assert order.idle and order.taken == 1


async def test_the_footer_keeps_whole_keys_and_lists_the_new_ones_where_they_fit() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        wide = footer_line(app)
        for key in ("q Quit", "? Help", "d Devices", "s TP/PP", "w Measure with", "H History"):
            assert key in wide
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        await handled(pilot)
        narrow = footer_line(app)
        assert narrow.startswith("q Quit ? Help")
        assert narrow.rstrip().endswith("^p palette")  # nothing after it, no key cut short
        keys = narrow.split("▏")[0].rstrip()
        assert keys.endswith(("Models", "Measure", "KV dtype", "Backend", "Devices"))


async def test_a_result_says_when_the_screen_left_its_runs_settings() -> None:
    app = make_app(
        build_app(preset="gfx1151").deps,
        LaunchOptions(max_tokens=640, preset="gfx1151", backend=Backend.ROCM),
        measured=peak(model=LLAMA),
    )
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot)
        panel, summary = app.screen.query_one(MeasuredPanel), app.screen.query_one(SummaryLine)
        assert "at 640 tokens, same settings" in panel.text
        assert "Not on screen" not in panel.text
        assert summary.text.endswith("✓ covered (torch)")
        await type_keys(pilot, "t768\r")
        await wait_for(pilot, lambda: "Not on screen" in panel.text, "the settings note")
        assert "at 640 tokens, the run's settings" in panel.text
        assert "same settings" not in panel.text
        assert "the run had 640 tokens; the screen has 768 tokens" in panel.text
        assert "768 tokens" in summary.text
        assert "✓ covered at the run's 640 tokens (torch)" in summary.text


async def test_at_120x40_the_chart_shows_columns_in_the_rows_on_screen() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        chart = app.screen.query_one(ContextChart)
        lines = widget_lines(chart)
        visible = chart.region.intersection(app.screen.query_one("#main").region)
        shown = lines[: visible.height]
        assert visible.height >= 4  # its top rows are in view at 120x40
        assert any("█" in line for line in shown[1:4])  # columns reach them
        assert "76.8 GiB available: above ↑" in shown[1]


async def test_at_60x20_the_summary_keeps_the_models_own_name() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        text = app.screen.query_one(SummaryLine).text
        assert text.startswith(" FITS  8K · 7.28 GiB · ")
        assert text.endswith("…/Meta-Llama-3.1-8B-Instruct-4bit")
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        await handled(pilot)
        text = app.screen.query_one(SummaryLine).text
        # Room for the org's start too, and for the total against the available memory.
        assert text.startswith(" FITS  8K · 7.28 GiB of 76.80 GiB · mlx-")
        assert text.endswith("…/Meta-Llama-3.1-8B-Instruct-4bit")


async def test_the_filter_box_names_the_model_only_where_its_name_fits() -> None:
    # Narrow, the model list folds to its filter box, which names the model on screen;
    # made wide, the box is 42 columns and says what it is for (it showed a cut
    # "/ filter ·" after a resize from 80x24); made narrow again, it names the model.
    named = "/ filter · mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        box = app.screen.query_one("#model-filter", Input)
        assert box.placeholder == named
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert box.placeholder == "/ filter models"
        assert widget_lines(box)[0].startswith("/ filter models")
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert box.placeholder == named


async def test_the_breakdown_kept_between_keys_is_the_one_made_anew() -> None:
    # A key re-renders only the blocks of the breakdown whose words or widths changed
    # (tui/widgets/breakdown.py); after each change its lines must be a fresh render's,
    # cell for cell and style for style.
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        breakdown = app.screen.query_one(Breakdown)

        def cells(fresh: bool) -> list[list[tuple[str, object]]]:
            if fresh:
                breakdown._blocks, breakdown._cache = {}, None
            strips = breakdown._strips(breakdown.size.width)
            return [[(s.text, s.style) for s in strip.simplify()] for strip in strips]

        changes = ["right", "right", "k", "n", "left", "t131072\r", "h1.5\r", "q", "Q"]
        for keys in changes:
            if keys == "q":  # narrow: no header, the notes cut; then wide again
                await pilot.resize_terminal(70, 30)
            elif keys == "Q":
                await pilot.resize_terminal(160, 48)
            elif len(keys) > 1 and keys.isalpha():
                await pilot.press(keys)
            else:
                await type_keys(pilot, keys)
            await settle(pilot)
            kept = cells(fresh=False)
            assert kept == cells(fresh=True), keys


@pytest.mark.parametrize(
    ("model", "line"),
    [(LLAMA, "available: above"), ("Qwen/Qwen3-30B-A3B", "┈")],
    ids=["a-peak-and-the-line-above", "the-available-line-across"],
)
async def test_the_chart_marks_each_column_as_a_whole_redraw_would(model: str, line: str) -> None:
    # A token key splices the marked column into rows kept between keys
    # (tui/widgets/context_chart.py); at every column, with a measured peak, the
    # available line above the range or across it, the cells must be render_chart's
    # own for that column.
    options = LaunchOptions(model=model, preset="gfx1151")
    app = make_app(build_app().deps, options, measured=peak(model=LLAMA))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        chart = app.screen.query_one(ContextChart)
        data = chart.data
        assert data is not None and bool(data.points) is (model == LLAMA)
        assert any(line in strip.text for strip in chart._draw(chart._kept.base()))
        base = chart._kept.base()
        columns = chart.size.width - LABEL_WIDTH - 2
        top = max(data.top_tokens, data.current_tokens, MIN_TOKENS + 1)
        contexts = sample_contexts(MIN_TOKENS, top, columns)
        totals = data.totals(contexts)
        points = point_columns(contexts, data.points)
        styles = chart._styles()
        rows = chart.size.height - 2
        for column, tokens in enumerate(contexts):
            chart.show(replace(data, current_tokens=tokens))
            spliced = chart._draw(base)
            whole = chart._strips_of(
                render_chart(contexts, totals, data.available, column, rows, styles, points), base
            )
            cells = [[(s.text, s.style) for s in strip.simplify()] for strip in spliced]
            assert cells == [[(s.text, s.style) for s in strip.simplify()] for strip in whole]
