"""The explorer's pure pieces: slider scales, parsers, bars, chart, command lines, state."""

from __future__ import annotations

import math
import shlex
from dataclasses import replace

import pytest

from core.answer.context import ContextAnswer, TrainedContext
from core.answer.device import MachineReadings
from core.answer.solve import FitLimit
from core.backend import Backend, BackendChoice
from core.estimate.available import AvailableMemory
from core.estimate.estimate import QuantHint
from core.estimate.inflight import MAX_ACCEPTED_INFLIGHT_MB
from core.measurement.engine import Engine
from core.units import GIB
from tui.headless import png_ready_svg
from tui.model.command_lines import mlxcel_command, vramscope_command
from tui.model.presets import CUSTOM, PRESETS_BY_KEY
from tui.model.rows import inflight_limit_text
from tui.model.scales import FACTOR_STOPS, INFLIGHT_STOPS, position_of, token_stops
from tui.model.state import (
    ExplorerState,
    LaunchOptions,
    MemoryChoice,
    explorer_device,
    initial_state,
    start_backend,
    with_memory,
)
from tui.model.values import (
    format_factor,
    parse_batch,
    parse_factor,
    parse_inflight,
    parse_tokens,
)
from tui.render.bars import bar, stacked_bar
from tui.render.chart import nearest_column, render_chart, sample_contexts, short_tokens
from tui.widgets.model_list import entry_prompt, matches

LLAMA = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
NO_GPU = BackendChoice(Backend.CPU, True, "no GPU device node found")
ROCM = BackendChoice(Backend.ROCM, True, "/dev/kfd (AMD KFD) present")


def test_token_stops_are_log_spaced_and_end_at_the_trained_context() -> None:
    stops = token_stops(131072)
    assert stops[:6] == (256, 320, 384, 448, 512, 640)
    assert stops[-1] == 131072
    assert list(stops) == sorted(set(stops))
    assert token_stops(4096)[-1] == 4096
    assert token_stops(None)[-1] == 131072  # unknown context: a sensible top
    assert token_stops(100) == (256,)  # never below the 256-token floor


def test_position_of_places_typed_values_between_stops() -> None:
    assert position_of(1024, INFLIGHT_STOPS) == INFLIGHT_STOPS.index(1024)
    assert position_of(896, INFLIGHT_STOPS) == 5.5  # halfway from 768 to 1024
    assert position_of(-5, INFLIGHT_STOPS) == 0
    assert position_of(10**9, INFLIGHT_STOPS) == len(INFLIGHT_STOPS) - 1


def test_factor_stops_hit_the_default_double_exactly() -> None:
    assert 1.2 in FACTOR_STOPS  # 1.0 + 4 * 0.05 would be 1.2000000000000002
    assert FACTOR_STOPS[0] == 1.0
    assert FACTOR_STOPS[-1] == 2.0


@pytest.mark.parametrize(
    ("text", "value"),
    [("8192", 8192), ("8,192", 8192), (" 32k ", 32768), ("0", 0), ("4294967296", 1 << 32)],
)
def test_parse_tokens_accepts(text: str, value: int) -> None:
    assert parse_tokens(text) == value


@pytest.mark.parametrize("text", ["", "-1", "1.5", "abc", "4294967297", "٣"])
def test_parse_tokens_rejects(text: str) -> None:
    assert parse_tokens(text) is None


def test_parse_inflight_is_the_overlays_parser_except_empty() -> None:
    assert parse_inflight("256") == 256
    assert parse_inflight("+256") == 256
    assert parse_inflight(" \t256") == 256
    assert parse_inflight("0") == 0
    assert parse_inflight(str(MAX_ACCEPTED_INFLIGHT_MB)) == MAX_ACCEPTED_INFLIGHT_MB
    for bad in ("", "  ", "-1", "256 ", "0x10", str(MAX_ACCEPTED_INFLIGHT_MB + 1)):
        assert parse_inflight(bad) is None


def test_parse_batch_and_factor() -> None:
    assert parse_batch("4") == 4
    assert parse_batch("0") is None
    assert parse_batch("4097") is None
    assert parse_factor("1.25") == 1.25
    assert parse_factor(" 1.3 ") == 1.3
    for bad in ("0", "-1", "nan", "inf", "abc", "1e9"):
        assert parse_factor(bad) is None
    assert format_factor(1.2) == "1.20"
    assert format_factor(1.234) == "1.234"


def test_bars_scale_against_available() -> None:
    assert bar(50, 100, 10).plain == "█████     "
    assert bar(1, 10**9, 10).plain == "▏         "  # a non-zero term always shows
    assert bar(0, 100, 4).plain == "    "
    assert bar(300, 100, 4).plain == "████"
    assert stacked_bar([(25, "a"), (25, "b")], 100, 8).plain == "████    "
    assert stacked_bar([(80, "a"), (80, "b")], 100, 8).plain.endswith("▶")
    assert stacked_bar([(1, "a")], 10**9, 8).plain == "▏       "


def test_chart_shape_marker_and_available_line() -> None:
    contexts = sample_contexts(256, 131072, 40)
    assert contexts[0] == 256
    assert contexts[-1] == 131072
    totals = [i * GIB for i in range(40)]
    text = render_chart(contexts, totals, 20 * GIB, current=10, height=8)
    lines = text.plain.split("\n")
    assert len(lines) == 10  # 8 rows, the axis, the ticks
    assert all(len(line) == len(lines[0]) for line in lines[:9])
    avail = next(line for line in lines if "┈" in line)
    assert avail.startswith("20.0 GiB")
    assert lines[-1][10 + 10] == "▲"
    assert "available: above" not in text.plain  # the line is drawn: no note
    assert short_tokens(131072) == "128K"
    assert short_tokens(1 << 20) == "1M"
    assert short_tokens(300) == "300"


def test_the_nearest_column_is_the_one_a_scan_of_every_column_finds() -> None:
    # nearest_column looks at two candidates (the chart asks it on every key); the answer
    # must be the column closest on the log scale, the first one on a tie, as a scan gives.
    def scan(contexts: list[int], tokens: int) -> int:
        target = math.log(max(tokens, 1))
        return min(range(len(contexts)), key=lambda i: abs(math.log(max(contexts[i], 1)) - target))

    for lo, hi, columns in ((256, 131072, 100), (1, 3, 40), (256, 300, 160), (2, 10**7, 7)):
        contexts = sample_contexts(lo, hi, columns)
        for tokens in {0, 1, lo - 1, lo, hi, hi + 1, *contexts, *(c + 1 for c in contexts)}:
            assert nearest_column(contexts, tokens) == scan(contexts, tokens), (contexts, tokens)


def test_the_value_axis_fits_the_data_and_says_where_a_far_available_line_is() -> None:
    # mlxcel's worked example: 5-23 GiB against 76.8 GiB available (issue #17: the columns
    # and the points were squashed under the line, an empty chart at 120x40).
    contexts = sample_contexts(256, 131072, 60)
    totals = [5 * GIB + i * GIB * 3 // 10 for i in range(60)]
    points = [(20, 6 * GIB, Engine.TORCH), (50, 19 * GIB, Engine.MLX)]
    lines = render_chart(contexts, totals, 76 * GIB, 30, 8, points=points).plain.split("\n")
    assert "76.0 GiB available: above ↑" in lines[0]
    assert "┈" not in "".join(lines)
    assert lines[0].startswith("24.2 GiB ┤")  # the top is the data's, not 76 GiB
    assert "█" in lines[1]  # the tallest columns reach the top rows
    top_mark = next(i for i, line in enumerate(lines) if "●" in line)
    low_mark = next(i for i, line in enumerate(lines) if "◆" in line)
    assert top_mark < low_mark < 7  # 19 GiB above 6 GiB, both off the 0 line
    # Available near the data: inside the range, its line drawn, no note.
    near = render_chart(contexts, totals, 26 * GIB, 30, 8).plain
    assert "26.0 GiB ┤┈" in near
    assert "available:" not in near
    # A flat curve high above 0 starts its axis above 0, labelled; everything over a
    # small budget far below it: the note says the line is below.
    flat = [50 * GIB + i * 10**8 for i in range(60)]
    chart = render_chart(contexts, flat, 10 * GIB, 0, 8).plain
    assert chart.split("\n")[7].startswith("49.")
    assert "10.0 GiB available: below ↓" in chart


def test_command_lines_reproduce_the_state() -> None:
    state = ExplorerState(memory=MemoryChoice("gfx1151"))
    available = PRESETS_BY_KEY["gfx1151"].available()
    assert vramscope_command(state, available, LLAMA) == (
        f"vramscope inspect {LLAMA} --max-tokens 8192 --backend rocm --inflight-mb 1024 "
        "--preset gfx1151"
    )
    assert mlxcel_command(state, available, LLAMA) == (
        "MLX_ROCM_MAX_INFLIGHT_MB=1024 MLXCEL_MEMORY_LIMIT=82463372083 "
        f"mlxcel inspect -m {LLAMA} --max-tokens 8192"
    )
    busy = ExplorerState(
        model="my models/x",
        max_tokens=5000,
        batch=4,
        kv_int8=True,
        quant=QuantHint.INT4,
        headroom_factor=1.3,
        inflight_mib=0,
        backend=Backend.CUDA,
    )
    detected = AvailableMemory(GIB, "/proc/meminfo")
    line = vramscope_command(busy, detected, busy.model)
    assert shlex.split(line) == [
        "MLXCEL_HEADROOM_FACTOR=1.3",
        "vramscope",
        "inspect",
        "my models/x",
        "--max-tokens",
        "5000",
        "--batch",
        "4",
        "--kv-cache-mode",
        "int8",
        "--quant",
        "int4",
        "--backend",
        "cuda",
    ]
    assert mlxcel_command(busy, detected, busy.model).startswith(
        "MLXCEL_HEADROOM_FACTOR=1.3 mlxcel inspect -m 'my models/x'"
    )


def test_the_explorer_opens_on_the_backend_inspect_picks_and_names_why() -> None:
    # One resolution: the flag, else the preset's device's, else this machine's, the CPU
    # where no GPU is found (as `inspect` with the same flags).
    assert start_backend(LaunchOptions(), NO_GPU) is Backend.CPU
    assert start_backend(LaunchOptions(), ROCM) is Backend.ROCM
    assert start_backend(LaunchOptions(backend=Backend.CUDA), ROCM) is Backend.CUDA
    assert start_backend(LaunchOptions(preset="rtx4090"), NO_GPU) is Backend.CUDA
    memory = MachineReadings(NO_GPU, AvailableMemory(GIB, "/proc/meminfo"))
    state, _ = initial_state(LaunchOptions(), {}, NO_GPU)
    device = explorer_device(state, memory)
    assert (device.backend, device.words) == (Backend.CPU, "cpu (no GPU found)")
    chosen = explorer_device(replace(state, backend=Backend.ROCM), memory)
    assert (chosen.backend, chosen.backend_reason) == (Backend.ROCM, "chosen")
    # A preset brings its backend; a size typed after it keeps the backend, now chosen.
    on_preset = with_memory(state, MemoryChoice("rx7900xtx"))
    assert explorer_device(on_preset, memory).words == "rocm (the Radeon RX 7900 XTX 24 GiB preset)"
    typed = with_memory(on_preset, MemoryChoice(CUSTOM, GIB))
    assert explorer_device(typed, memory).words == "rocm (chosen)"


def test_initial_state_reads_flags_then_environment() -> None:
    env = {"MLX_ROCM_MAX_INFLIGHT_MB": "2048", "MLXCEL_HEADROOM_FACTOR": "oops"}
    state, warnings = initial_state(LaunchOptions(), env, ROCM)
    assert state.inflight_mib == 2048
    assert state.headroom_factor == 1.2
    assert any("MLXCEL_HEADROOM_FACTOR" in w for w in warnings)
    state, _ = initial_state(LaunchOptions(inflight_raw="256", memory_limit=GIB), env, ROCM)
    assert state.inflight_mib == 256
    assert state.memory == MemoryChoice(CUSTOM, GIB)
    device = explorer_device(state, MachineReadings(ROCM))
    assert device.available == AvailableMemory(GIB, "typed size")
    state, warnings = initial_state(LaunchOptions(inflight_raw="1G"), {}, ROCM)
    assert state.inflight_mib == 1024
    assert warnings  # the overlay's "ignoring invalid" line


def test_limit_words() -> None:
    trained = TrainedContext(131072, "max_position_embeddings")
    assert ContextAnswer(FitLimit(98304), trained).words == "98,304 tokens (trained: 131,072)"
    capped = ContextAnswer(FitLimit(482560), trained)
    assert (capped.tokens, capped.capped) == (131072, True)
    assert capped.words.startswith("131,072 tokens, the trained context")
    assert "memory allows 482,560" in capped.words
    assert ContextAnswer(FitLimit(None), trained).words.startswith("none")
    assert ContextAnswer(FitLimit(1 << 32, True), None).words.startswith("any")
    assert inflight_limit_text(None, "CUDA") == "n/a (CUDA builds reserve none)"
    assert inflight_limit_text(FitLimit(72208), "ROCm") == "72,208 MiB"


def test_model_rows_are_cut_to_width_and_filter_by_every_word() -> None:
    from core.catalog.resolve import profile_entry

    entry = profile_entry(LLAMA)
    for width in (30, 40, 60):
        prompt = entry_prompt(entry, current=True, width=width)
        assert all(len(line) <= width for line in prompt.plain.split("\n"))
    assert "mlx-c…/Meta-Llama-3.1-8B-Instruct-4bit" in entry_prompt(entry, True, 40).plain
    assert matches(entry, "llama 4-BIT")
    assert not matches(entry, "llama qwen")


def test_png_ready_svg_places_every_character_in_its_cell() -> None:
    svg = (
        "font-family: Fira Code, monospace; font-size: 20px;"
        '<text class="r1" x="24.4" y="20" textLength="36.6" clip-path="url(#l1)">a&#160;b</text>'
    )
    out = png_ready_svg(svg)
    assert "DejaVu Sans Mono" in out
    assert '<text class="r1" x="24.4" y="20" clip-path="url(#l1)">a</text>' in out
    assert '<text class="r1" x="48.8" y="20" clip-path="url(#l1)">b</text>' in out
