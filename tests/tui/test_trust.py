"""Issue 11 through Pilot: typed values, bursts of keys, small sizes, resizes, names, defects.

Bursts are posted to the app all at once (`tests.factories.burst`), not with
Pilot's pause after every key, which is how a paste or a fast typist arrives.
tests/tui/test_tmux.py sends the same keys to a real `vramscope` in tmux.
"""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.widgets import Footer, Input

from core.catalog.profiles import load_profile
from core.catalog.resolve import Catalog, CatalogEntry
from core.errors import ModelError
from core.estimate.snapshot import ModelSnapshot
from core.measurement.engine import Engine
from core.measurement.protocol import MeasureProgress
from tests.factories import LLAMA, burst, peak
from tests.tui.fake_launcher import FakeLauncher
from tests.tui.helpers import (
    breakdown_text,
    build_app,
    fixed_deps,
    handled,
    settle,
    type_keys,
    wait_for,
    widget_lines,
)
from tui.app import VramscopeApp
from tui.model.measure_state import PanelKind
from tui.screens.explorer_screen import ExplorerScreen
from tui.widgets.command_lines_view import LONG_WORD, CommandLinesView, shown
from tui.widgets.context_chart import ContextChart
from tui.widgets.measured_panel import MeasuredPanel
from tui.widgets.model_list import NO_MODELS, ModelList
from tui.widgets.slider_field import SliderField
from tui.widgets.status_line import SummaryLine

QWEN_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"


def field(app: VramscopeApp, name: str) -> SliderField:
    return app.screen.query_one(f"#{name}", SliderField)


def summary(app: VramscopeApp) -> str:
    return app.screen.query_one(SummaryLine).text


async def test_a_burst_of_keys_lands_in_the_field_it_names() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        burst(app, "t4096\r")
        await handled(pilot)
        assert app.explorer.state.max_tokens == 4096
        burst(app, "t1.5k\ri2G\rb12\rh1.35\r")  # `k` and `b` are text here, not keys
        await handled(pilot)
        s = app.explorer.state
        assert (s.max_tokens, s.inflight_mib, s.batch, s.headroom_factor) == (1536, 2048, 12, 1.35)
        assert not s.kv_int8
        assert "1,536 tokens" in summary(app)
        burst(app, "t32k\rk")  # after Enter, `k` is the KV key again
        await handled(pilot)
        assert (app.explorer.state.max_tokens, app.explorer.state.kv_int8) == (32768, True)


async def test_a_burst_typed_as_the_first_frame_appears_waits_for_the_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first frame is the top lines and the footer; the body (the sliders a burst
    # names) is mounted right after it. Keys that come in between are held, not lost.
    mount_body = ExplorerScreen.mount_body
    typed_before: list[bool] = []

    async def typed_first(screen: ExplorerScreen) -> None:
        if not typed_before:  # the first call mounts it (a timer calls again, to no effect)
            typed_before.append(len(screen.query(SliderField)) == 0)
            # From outside any widget, as the terminal's keys come (a key a widget sent
            # stops bubbling at it: Textual's rule), while the body is being mounted.
            asyncio.get_running_loop().call_soon(
                burst, screen.app, "t4096\ri2G\rk", context=contextvars.Context()
            )
        await mount_body(screen)

    monkeypatch.setattr(ExplorerScreen, "mount_body", typed_first)
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        s = app.explorer.state
        assert typed_before == [True]  # no slider was there when the keys came
        assert (s.max_tokens, s.inflight_mib, s.kv_int8) == (4096, 2048, True)
        assert "4,096 tokens" in summary(app)
        assert field(app, "tokens").query_one(Input).value == "4096"


async def test_an_enter_typed_before_the_first_frame_ends_an_entry_as_enter_does() -> None:
    # Keys typed while the terminal is still cooked (before the first frame) come with
    # Enter turned into a line feed, which Textual reads as ctrl+j.
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        burst(app, "t32k\nk")  # after the line feed, `k` is the KV key again
        await handled(pilot)
        s = app.explorer.state
        assert (s.max_tokens, s.kv_int8, field(app, "tokens").typing) == (32768, True, False)
        burst(app, "t-5\n")  # refused, as Enter refuses it
        await handled(pilot)
        assert (app.explorer.state.max_tokens, field(app, "tokens").typing) == (32768, True)
        burst(app, "\x1b")
        await handled(pilot)
        app.screen.set_focus(field(app, "tokens").input)  # the box itself, as a click does
        burst(app, "\x7f" * 5 + "2048\n")
        await handled(pilot)
        assert (app.explorer.state.max_tokens, field(app, "tokens").typing) == (2048, False)


async def test_a_burst_with_backspaces_edits_a_text_box_in_the_order_typed() -> None:
    # A Backspace in a box bubbled up through every container before the app ran it,
    # and the letter typed after it came first: `qwex` Backspace `n` read `qwex`.
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        burst(app, "/qwex\x7fn")
        await handled(pilot)
        assert app.screen.query_one("#model-filter", Input).value == "qwen"
        app.screen.set_focus(field(app, "tokens").input)  # all of it selected, as a click
        burst(app, "\x7f\x7f40\x7f96\n")
        await handled(pilot)
        assert app.explorer.state.max_tokens == 496


async def test_keys_sent_with_an_escape_from_a_text_box_are_keys_again() -> None:
    app = build_app(preset="rx7900xtx")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        burst(app, "/llama\x1bk")  # filter, leave the box, KV dtype: in one write
        await handled(pilot)
        assert app.screen.query_one("#model-filter", Input).value == "llama"
        assert app.explorer.state.kv_int8  # `k` was a key, not a letter in the box
        burst(app, "d")
        await handled(pilot)
        await pilot.click("#device-memory")
        burst(app, "24GB\x1bd")
        await handled(pilot)
        assert app.explorer.state.device_memory == "24GB"
        assert app.explorer.state.devices == 3


async def test_the_parsed_value_is_shown_while_typing() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        burst(app, "t128K")
        await handled(pilot)
        assert field(app, "tokens").typed_note == "= 131,072 tokens"
        assert app.explorer.state.max_tokens == 131072  # a live preview
        burst(app, "\ri1G")
        await handled(pilot)
        assert field(app, "inflight").typed_note == "= 1,024 MiB"
        assert field(app, "inflight").input.value == "1G"


async def test_enter_refuses_an_invalid_entry_and_escape_restores_the_value_before() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        before = breakdown_text(app)
        burst(app, "t5000000000\r")  # one past 2^32: its 9-digit prefix must not stick
        await handled(pilot)
        tokens = field(app, "tokens")
        assert app.explorer.state.max_tokens == 8192
        assert tokens.input.value == "5000000000"
        assert tokens.typed_note == (
            "must be at most 4,294,967,296 tokens, got '5000000000' · Esc restores 8192"
        )
        assert breakdown_text(app) == before
        burst(app, "\x1b")
        await handled(pilot)
        assert (tokens.input.value, tokens.typing) == ("8192", False)
        burst(app, "h101\r")
        await handled(pilot)
        assert app.explorer.state.headroom_factor == 1.2
        assert "at most 100" in field(app, "factor").typed_note
        burst(app, "\x1bi1x\r")
        await handled(pilot)
        assert app.explorer.state.inflight_mib == 1024


async def test_a_paste_on_a_slider_goes_into_its_box() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        slider = field(app, "tokens").slider
        assert slider.has_focus
        slider.post_message(events.Paste("\n 24576 \n"))
        await handled(pilot)
        assert field(app, "tokens").input.value == "24576"
        burst(app, "\r")
        await handled(pilot)
        assert app.explorer.state.max_tokens == 24576


async def test_at_60x20_the_answer_and_quit_and_help_stay_in_view() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        line = app.screen.query_one(SummaryLine)
        assert 0 <= line.region.y < 20 and line.region.right <= 60
        text = widget_lines(line)[0].strip()
        assert text == "FITS  8K · 7.28 GiB · …/Meta-Llama-3.1-8B-Instruct-4bit"
        footer = app.screen.query_one(Footer)
        assert footer.region.bottom == 20
        in_view = {
            key.description  # type: ignore[attr-defined]
            for key in footer.query("FooterKey")
            if key.region.width and key.region.right <= 60
        }
        assert {"Quit", "Help"} <= in_view
        burst(app, "t1m\r")  # over the budget: the verdict changes in view
        await handled(pilot)
        # 1M tokens, past the 128K the model was trained for: flagged even here.
        assert widget_lines(line)[0].strip().startswith("DOES NOT FIT  1M! · ")


async def test_the_chart_and_panels_redraw_on_a_resize_round_trip() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        chart = app.screen.query_one(ContextChart)
        wide = widget_lines(chart)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert widget_lines(chart) == wide
        axis = wide[-2]  # the tick line, above the bottom border
        assert axis.rstrip(" │").endswith("128K")  # the trained context, not a stale end


async def test_m_shows_its_progress_in_the_summary_at_80x24() -> None:
    launcher = FakeLauncher()
    app = build_app(fixed_deps(start_measurement=launcher), preset="gfx1151")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await wait_for(pilot, launcher.started.is_set, "the launcher to be called")
        launcher.handles[0].emit(MeasureProgress("prefill", 4, 16))
        await wait_for(pilot, lambda: "prefill token 4/16" in summary(app), "progress")
        assert "measuring (torch)" in summary(app)
        await pilot.press("m")
        await wait_for(pilot, lambda: "measuring" not in summary(app), "the cancel")


async def test_the_summary_gives_the_measured_peak_once_the_run_ends() -> None:
    launcher = FakeLauncher()
    app = build_app(fixed_deps(start_measurement=launcher), preset="gfx1151")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await wait_for(pilot, launcher.started.is_set, "the launcher to be called")
        launcher.handles[0].finish(peak(context=8192, peak_bytes=1_000_000_000))
        await wait_for(pilot, lambda: "measuring" not in summary(app), "the result")
        covered = summary(app)
        launcher.handles.clear()
        await pilot.press("m")
        await wait_for(pilot, lambda: len(launcher.handles) == 1, "the second run")
        launcher.handles[0].finish(peak(context=8192, peak_bytes=90_000_000_000))
        await wait_for(pilot, lambda: "measuring" not in summary(app), "the second result")
        over = summary(app)
    assert "measured 953.7 MiB ✓ covered" in covered  # under the 5.4 GiB estimate
    assert "measured 83.82 GiB ✗ NOT covered" in over


async def test_cancelling_a_new_run_keeps_the_previous_result() -> None:
    launcher = FakeLauncher()
    app = build_app(fixed_deps(start_measurement=launcher), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(MeasuredPanel)
        await pilot.press("m")
        await wait_for(pilot, lambda: len(launcher.handles) == 1, "the first run")
        launcher.handles[0].finish(peak(context=8192, peak_bytes=6_000_000_000))
        await wait_for(pilot, lambda: panel.kind is PanelKind.RESULT, "the first result")
        await pilot.press("m")
        await wait_for(pilot, lambda: len(launcher.handles) == 2, "the second run")
        await pilot.press("m")  # cancel it
        await wait_for(pilot, lambda: panel.kind is PanelKind.RESULT, "the previous result again")
        assert "6,000,000,000 bytes" in panel.text
        assert "the new run was cancelled" in panel.text


async def test_the_measure_panel_names_the_engine_and_what_was_counted() -> None:
    launcher = FakeLauncher()
    app = build_app(fixed_deps(start_measurement=launcher), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.click("#engine", offset=(10, 0))  # ` torch ` then ` mlx `
        assert app.explorer.state.engine is Engine.MLX
        await pilot.press("m")
        await wait_for(pilot, lambda: len(launcher.handles) == 1, "the run")
        assert launcher.handles[0].request.engine is Engine.MLX
        panel = app.screen.query_one(MeasuredPanel)
        assert "engine mlx" in panel.text
        done = peak(context=8192, engine="mlx", peak_kind="mx.get_peak_memory()")
        launcher.handles[0].finish(done)
        await wait_for(pilot, lambda: panel.kind is PanelKind.RESULT, "the result")
        assert "mlx engine · MLX peak memory" in panel.text
        chart = app.screen.query_one(ContextChart)
        assert chart.border_subtitle == "● mlx · measured peaks at 1024 MiB: 1"


async def test_an_unsupported_family_is_refused_at_once() -> None:
    launcher = FakeLauncher()
    app = build_app(fixed_deps(start_measurement=launcher), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await type_keys(pilot, "/gemma-2-2b-it\r")
        await settle(pilot)
        await pilot.press("escape", "m")
        panel = app.screen.query_one(MeasuredPanel)
        await wait_for(pilot, lambda: panel.kind is PanelKind.FAILURE, "the refusal")
        assert launcher.handles == []  # no child was started to find out
        assert "model type 'gemma2' is not supported for measurement" in panel.text


async def test_the_command_lines_follow_a_model_that_cannot_be_read() -> None:
    base = fixed_deps()

    def load(entry: CatalogEntry) -> ModelSnapshot:
        if entry.name == "google/gemma-2-2b-it":
            raise ModelError("google/gemma-2-2b-it", "config.json is unreadable")
        return base.load_snapshot(entry)

    app = build_app(replace(base, load_snapshot=load))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await type_keys(pilot, "/gemma-2-2b-it\r")
        await settle(pilot)
        view = app.screen.query_one("#commands", CommandLinesView)
        assert "google/gemma-2-2b-it" in view.vramscope
        assert "config.json is unreadable" in summary(app)


async def test_an_empty_catalog_says_how_to_add_models() -> None:
    app = build_app(fixed_deps(build_catalog=lambda: Catalog((), ())))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        options = app.screen.query_one(ModelList).options
        assert str(options.get_option_at_index(0).prompt) == NO_MODELS


async def test_a_config_only_folder_is_marked_as_an_analytical_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every built-in profile has a tensor list now; a folder with only config.json
    # still takes mlxcel's analytical path, and the screen says so.
    folder = tmp_path / "config-only"
    folder.mkdir()
    (folder / "config.json").write_text(load_profile(QWEN_NEXT).config_text)
    from core.catalog.resolve import resolve_entry

    deps = fixed_deps(resolve_entry=lambda name: resolve_entry(name, ()))
    monkeypatch.chdir(tmp_path)  # a short name, so the summary line has room for the mark
    app = build_app(deps, model="config-only", preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert "(weights: analytical estimate)" in summary(app)
        assert "analytical estimate from config.json" in breakdown_text(app)
        # mlxcel's 1442 GiB is kept, and the warning above the terms gives vramscope's count.
        words = " ".join(breakdown_text(app).split())
        assert "⚠ weights: mlxcel's analytical count from config.json, 1442.27 GiB" in words
        assert "vramscope's own count from the config's shapes (512 experts," in words
        assert "is 147.22 GiB (158078668800 bytes): 9.80x" in words


async def test_the_breakdown_bytes_have_separators() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert "4,517,404,672" in breakdown_text(app)
        assert "(74,642,249,216 bytes) free" in breakdown_text(app)


def test_the_history_names_a_cache_snapshot_by_its_repo_id() -> None:
    from tui.render.history_table import export_markdown, history_row

    path = "/h/hub/models--mlx-community--Qwen3-0.6B-4bit/snapshots/0123abcd"
    row = history_row(peak(model=path, engine="mlx", peak_kind="mx.get_peak_memory()"))
    assert row.cells[1] == "mlx-community/Qwen3-0.6B-4bit"
    assert row.cells[2] == "mlx peak"
    export = export_markdown([peak(model=path, engine="mlx", peak_kind="mx.get_peak_memory()")])
    assert "mlx-community/Qwen3-0.6B-4bit" in export and "0123abcd" not in export
    assert "mlx: mx.get_peak_memory()" in export
    # An MLX run on the CPU is held against the CPU formula, and the row says so.
    assert "| MLX (mlx-lm) | CPU | fp16 | 640 |" in export  # budget: n/a (no queue)
    assert "ROCm formula at" not in export


async def test_history_numbers_are_right_aligned(tmp_path: Any) -> None:
    from rich.text import Text
    from textual.widgets import DataTable

    from core.measurement.history import HistoryStore

    store = HistoryStore(tmp_path / "history.jsonl")
    store.append(peak(estimate_bytes=6_000_000_000))
    app = build_app(fixed_deps(history=lambda: store), preset="gfx1151")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        cells = table.get_row_at(0)
        peak_cell = cells[6]
        assert isinstance(peak_cell, Text) and peak_cell.justify == "right"
        assert peak_cell.plain == "4.66 GiB"
        assert str(cells[1]) == "mlx-community/Meta-Llama-3.1-…"


async def test_the_palette_lists_memory_presets_in_size_order() -> None:
    from textual.widgets import OptionList

    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await handled(pilot)
        options = app.screen.query_one(OptionList)
        titles = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        apple = [t.split("\n")[0] for t in titles if "Apple M-series" in t]
        sizes = [int(t.split()[-2]) for t in apple]
        assert sizes == [16, 24, 32, 36, 48, 64, 96, 128, 192, 512]


async def test_a_long_model_path_never_cuts_the_command_lines_mid_flag(tmp_path: Any) -> None:
    from core.catalog.resolve import resolve_entry
    from tests.core.catalog.catalog_fixtures import write_tiny_model

    folder = write_tiny_model(tmp_path / ("deeply-nested-folder-" * 6) / "tiny-llama-model")
    deps = fixed_deps(resolve_entry=lambda name: resolve_entry(name, ()))
    app = build_app(deps, model=str(folder), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await handled(pilot)
        assert app.explorer.loader.snapshot is not None
        view = app.screen.query_one("#commands", CommandLinesView)
        assert str(folder) in view.vramscope  # `c` copies the whole path
        painted = shown(view.vramscope)  # what the panel wraps: at spaces only
        assert max(len(word) for word in painted.split(" ")) <= LONG_WORD
        for flag in ("--max-tokens 8192", "--backend rocm", "--inflight-mb 1024"):
            assert flag in painted
        assert "--preset gfx1151" in painted
        assert "…" in painted and painted.split(" ")[2].endswith("/tiny-llama-model")
        assert shown(f"vramscope inspect {LLAMA}") == f"vramscope inspect {LLAMA}"  # whole


def test_axis_labels_off_the_round_values_are_short() -> None:
    from tui.model.scales import short_tokens

    assert short_tokens(3_340_429) == "3.2M"  # was `3340429.`, cut by the axis
    assert short_tokens(133_632) == "130.5K"
    assert (short_tokens(131_072), short_tokens(1 << 20), short_tokens(256)) == (
        "128K",
        "1M",
        "256",
    )


def test_no_fitting_context_reads_none_not_zero_tokens() -> None:
    from core.answer.context import ContextAnswer, TrainedContext
    from core.answer.solve import FitLimit

    trained = TrainedContext(131_072, "max_position_embeddings")
    assert ContextAnswer(FitLimit(0), trained).words.startswith("none")
    assert ContextAnswer(FitLimit(None), trained).words.startswith("none")
    assert ContextAnswer(FitLimit(5000), None).words == "5,000 tokens"
