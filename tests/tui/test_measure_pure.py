"""The pure pieces of measuring from the explorer: the request, the chart's points, the words."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from core.catalog.resolve import ORIGIN_FOLDER, CatalogEntry, profile_entry
from core.estimate.weights import WeightsSource
from core.measurement.engine import Engine
from core.measurement.protocol import MeasureProgress
from core.measurement.result import MeasuredPeak
from tests.factories import LLAMA, peak
from tui.model.chart_data import MEASURED_MARK
from tui.model.measure_plan import measure_request, measure_target, split_context
from tui.model.measure_state import (
    PanelKind,
    PanelView,
    progress_label,
    result_words,
    run_differences,
)
from tui.model.names import short_model
from tui.model.state import ExplorerState
from tui.model.views import chart_points
from tui.render.chart import point_columns, render_chart
from tui.render.history_table import display_path, history_row, newest_first, when
from tui.render.measure_text import result_rows


@pytest.mark.parametrize(
    ("max_tokens", "split"),
    [(8192, (8064, 128)), (640, (512, 128)), (256, (128, 128)), (32, (16, 16)), (0, (1, 1))],
)
def test_prompt_and_gen_tokens_add_up_to_the_context_on_screen(
    max_tokens: int, split: tuple[int, int]
) -> None:
    assert split_context(max_tokens) == split


def test_the_request_names_what_the_catalog_resolved() -> None:
    folder = CatalogEntry(
        "tiny",
        ORIGIN_FOLDER,
        "MLX",
        1,
        WeightsSource.SAFETENSORS_HEADER,
        None,
        None,
        True,
        Path("/m/tiny"),
    )
    assert measure_target(folder, "tiny") == "/m/tiny"
    assert measure_target(profile_entry(LLAMA), LLAMA) == LLAMA
    assert measure_target(None, "typed/name") == "typed/name"
    state = ExplorerState(model="tiny", max_tokens=4096, inflight_mib=256, headroom_factor=1.5)
    request = measure_request(state, folder, [Path("/models")])
    assert (request.model, request.prompt_tokens, request.gen_tokens) == ("/m/tiny", 3968, 128)
    assert (request.inflight, request.device, request.headroom_factor) == (256, "auto", 1.5)
    assert request.models_dirs == ("/models",)
    assert not request.kv_int8
    # KV int8 on screen: the mlx engine measures mlx-lm's 8-bit cache; torch has none.
    int8 = ExplorerState(model="tiny", kv_int8=True)
    assert measure_request(replace(int8, engine=Engine.MLX), folder).kv_int8
    assert not measure_request(int8, folder).kv_int8


def test_measured_points_are_their_engines_mark_in_the_cell_of_their_value() -> None:
    contexts = [256, 512, 1024, 2048]
    totals = [10, 20, 30, 40]
    points = [(2, 40, Engine.TORCH), (1, 5, Engine.MLX)]
    text = render_chart(contexts, totals, 0, 0, 4, points=points).plain.split("\n")
    # The axis fits the data (no available line): 0 to 40 + 35 // 12 = 42 over four rows;
    # 40 sits in the top row, 5 in the bottom one; each mark (◆ torch, ● mlx) replaces
    # the column's block in its cell.
    assert [row[10:] for row in text[:4]] == ["  ◆▆", "  ▇█", " ▇██", "█●██"]
    assert MEASURED_MARK == "◆"


def test_points_outside_the_plotted_contexts_are_left_out() -> None:
    assert point_columns(
        [256, 1024, 4096], [(100, 1, Engine.TORCH), (1000, 2, Engine.MLX), (9000, 3, Engine.TORCH)]
    ) == [(1, 2, Engine.MLX)]


def test_the_chart_shows_this_models_runs_at_the_budget_on_screen() -> None:
    runs = [peak(), peak(inflight=256), peak(model="other/model"), peak(model="/m/tiny")]
    state = ExplorerState(model=LLAMA)
    assert chart_points(runs, {LLAMA}, state) == ((640, 5_000_000_000, Engine.TORCH),)
    assert (
        chart_points(runs, {LLAMA, "/m/tiny"}, state) == ((640, 5_000_000_000, Engine.TORCH),) * 2
    )
    # Runs are batch 1: no points on a curve for another batch.
    assert chart_points(runs, {LLAMA}, ExplorerState(model=LLAMA, batch=4)) == ()
    # An 8-bit KV run (mlx-lm's quantized cache) is a point on the int8 curve only.
    int8 = peak(engine="mlx", kv_cache_mode="int8", peak_bytes=4_000_000_000)
    assert chart_points([*runs, int8], {LLAMA}, ExplorerState(model=LLAMA, kv_int8=True)) == (
        (640, 4_000_000_000, Engine.MLX),
    )
    assert (640, 4_000_000_000, Engine.MLX) not in chart_points([*runs, int8], {LLAMA}, state)


def test_progress_words() -> None:
    assert progress_label(None) == "starting: importing torch…"
    assert progress_label(MeasureProgress("load", 3, 53)) == "loading tensors 3/53"
    assert progress_label(MeasureProgress("warmup decode", 5, 20)) == "warm-up decode token 5/20"
    assert progress_label(MeasureProgress("prefill", 2, 8)) == "prefill token 2/8"
    assert progress_label(MeasureProgress("decode", 40, 128)) == "decode token 40/128"
    assert progress_label(MeasureProgress("new phase", 1, 2)) == "new phase 1/2"
    assert short_model("/models/tiny-llama-4bit") == "tiny-llama-4bit"
    assert short_model(LLAMA) == LLAMA


def test_history_rows() -> None:
    old, new = peak(timestamp="2025-06-01T10:00:00+00:00"), peak(timestamp="2025-06-02T11:30:59Z")
    assert newest_first([old, new]) == [new, old]
    assert when(new.timestamp) == "2025-06-02 11:30"
    assert when("") == "-"
    covered = history_row(peak(estimate_bytes=5_500_000_000, synthetic_weights=True))
    assert covered.covered is True
    assert covered.cells[2:] == (
        "torch RSS",
        "cpu (synth)",
        "1024 MiB",
        "512+128",
        "4.66 GiB",
        "5.12 GiB",
        "+476.8 MiB +10.0%",
        "✓ yes",
    )
    over = history_row(peak(estimate_bytes=4_000_000_000, inflight=0))
    assert (over.covered, over.cells[4], over.cells[-1]) == (False, "0 (off)", "✗ NO")
    assert over.cells[1] == "mlx-community/Meta-Llama-3.1-…"  # the org stays
    assert history_row(peak(model="/m/" + "x" * 60)).cells[1] == "x" * 29 + "…"
    assert history_row(peak()).covered is None
    assert history_row(peak()).cells[-3:] == ("-", "-", "-")


def test_paths_under_home_are_shown_with_a_tilde(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/u")
    assert display_path(Path("/home/u/.local/state/vramscope/m.jsonl")) == (
        "~/.local/state/vramscope/m.jsonl"
    )
    assert display_path(Path("/home/user2/x")) == "/home/user2/x"


def test_the_run_line_names_the_kv_cache_and_the_attention_that_ran() -> None:
    def run_line(p: MeasuredPeak) -> str:
        return next(text.plain for label, text in result_rows(p, 6_000_000_000) if label == "Run")

    torch_run = peak(extra={"attention": "mlx-fallback"})
    assert "fp16 KV" in run_line(torch_run)
    assert "MLX's unfused attention" in run_line(torch_run)
    assert "torch's SDPA" in run_line(peak(extra={"attention": "torch-sdpa"}))
    mlx_int8 = peak(engine="mlx", kv_cache_mode="int8", extra={"attention": "mlx-fallback"})
    assert "int8 KV" in run_line(mlx_int8)
    assert "attention" not in run_line(mlx_int8)  # MLX ran its own; nothing was chosen
    assert "attention" not in run_line(peak())  # a record from before the choice existed


def test_a_history_row_says_when_the_kv_cache_was_8_bit() -> None:
    assert history_row(peak()).cells[5] == "512+128"
    assert history_row(peak(engine="mlx", kv_cache_mode="int8")).cells[5] == "512+128 int8 KV"


def test_a_peak_is_held_against_the_estimate_of_its_own_run() -> None:
    """As `vramscope measure` compares them: an MLX run on the CPU has no in-flight term
    and an int8-KV run is held against the int8 estimate; a torch run that emulated the
    queue is held against ROCm's formula with its budget."""
    from core.backend import Backend
    from core.catalog.resolve import entry_snapshot
    from core.estimate.estimate import EstimateSettings, Workload, estimate
    from tests.factories import MEMINFO_32G
    from tui.model.views import peak_estimate

    snapshot = entry_snapshot(profile_entry(LLAMA))
    state = ExplorerState(model=LLAMA, inflight_mib=256)

    def expected(backend: Backend, kv_int8: bool, inflight: int) -> int:
        settings = EstimateSettings(backend=backend, available=MEMINFO_32G, inflight_mib=inflight)
        work = Workload(max_tokens=640, kv_int8=kv_int8)
        return estimate(snapshot, work, settings).total_bytes

    torch_run = peak(inflight=1024)
    mlx_int8 = peak(engine="mlx", kv_cache_mode="int8", inflight=0)
    assert peak_estimate(torch_run, snapshot, state, MEMINFO_32G) == expected(
        Backend.ROCM, False, 1024
    )
    cpu_int8 = expected(Backend.CPU, True, 0)
    assert peak_estimate(mlx_int8, snapshot, state, MEMINFO_32G) == cpu_int8
    assert cpu_int8 < expected(Backend.CPU, False, 0) < expected(Backend.ROCM, False, 1024)


def test_the_result_says_which_formula_and_queue_the_run_is_held_against() -> None:
    def rows(p: MeasuredPeak) -> dict[str, str]:
        return {label: text.plain for label, text in result_rows(p, 6_000_000_000)}

    torch_run = rows(peak(inflight=768))
    assert torch_run["Estimate"].endswith("at 640 tokens, same settings")
    assert "in-flight 768 MiB" in torch_run["Run"]
    mlx_cpu = rows(peak(engine="mlx", peak_kind="mx.get_peak_memory()"))
    assert mlx_cpu["Estimate"].endswith("CPU formula (no in-flight term)")
    assert "no in-flight queue (MLX on cpu)" in mlx_cpu["Run"]
    assert "in-flight 1024" not in mlx_cpu["Run"]
    off = rows(peak(extra={"inflight_emulation": "none"}))
    assert "no in-flight queue emulated" in off["Run"]


def test_a_result_says_which_of_its_runs_settings_the_screen_no_longer_has() -> None:
    run = peak(prompt_tokens=32, gen_tokens=32)  # measured at 64 tokens
    same = ExplorerState(model=LLAMA, max_tokens=64)
    assert run_differences(run, same) == ()
    moved = replace(same, max_tokens=768, inflight_mib=512, kv_int8=True, batch=4)
    assert run_differences(run, moved) == (
        ("64 tokens", "768 tokens"),
        ("in-flight 1024 MiB", "in-flight 512 MiB"),
        ("fp16 KV", "int8 KV"),
        ("batch 1", "batch 4"),
    )
    rows = {label: text.plain for label, text in result_rows(run, 6_000_000_000)}
    assert "at 64 tokens, same settings" in rows["Estimate"]
    assert "Not on screen" not in rows
    moved_rows = result_rows(
        run, 6_000_000_000, run_differences(run, replace(same, max_tokens=768))
    )
    words = {label: text.plain for label, text in moved_rows}
    assert "at 64 tokens, the run's settings" in words["Estimate"]
    assert "same settings" not in words["Estimate"]
    assert words["Not on screen"].startswith("the run had 64 tokens; the screen has 768 tokens")
    # The summary's verdict is claimed for the run's context, never the screen's.
    view = PanelView(
        PanelKind.RESULT, peak=run, estimate=6_000_000_000, differs=(("64 tokens", "768"),)
    )
    assert result_words(view) == "measured 4.66 GiB ✓ covered at the run's 64 tokens (torch)"
    assert "at the run's" not in result_words(replace(view, differs=()))
