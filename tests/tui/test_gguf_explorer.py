"""The explorer on a GGUF model (#40): opened by path, folder or from the model list,
llama.cpp's controls in place of mlxcel's, the load split between the device and the
host, and a `llama-server` line, through the real app (Pilot) on synthesized GGUF files
(`tests/gguf_llama_models.py`: gguf-py's GGUFWriter, no download).

Every figure on screen is held against `vramscope inspect FILE.gguf --json` run through
the real CLI with the flags of the explorer's own `vramscope inspect` line, and the
`llama-server` line is read back by `vramscope run`'s llama.cpp flag reader."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.catalog.entry import Catalog
from core.estimate.available import AvailableMemory
from core.estimate.weights import WeightsSource
from core.gguf_load.run import read_llama_command
from core.load.llama_cpp import FlashAttn, KvCacheType
from core.units import format_bytes_short
from tests.factories import ROCM_MACHINE
from tests.gguf_llama_models import write_model
from tests.hub_server import FakeHub, sparse_from_folder
from tests.tui.helpers import (
    build_app,
    displayed,
    fixed_deps,
    handled,
    settle,
    type_keys,
    wait_for,
)
from tui.app import VramscopeApp
from tui.cli import main
from tui.gguf.question import llama_options
from tui.gguf.words import GgufView
from tui.model.scales import ALL_GPU_LAYERS, layer_stops
from tui.model.state import initial_state
from tui.widgets.breakdown import Breakdown
from tui.widgets.command_lines_view import CommandLinesView
from tui.widgets.controls import Controls
from tui.widgets.model_list import ModelList
from tui.widgets.slider_field import SliderField

LIMIT = 24 << 20
"""The available memory the explorer is given (a typed size: its line says it)."""


def app_on(model: Path | str, models_dir: Path | None = None, **options: Any) -> VramscopeApp:
    """The explorer opened on `model`, 24 MiB available (typed), and with `models_dir`
    the folder the model list finds GGUF files in."""
    deps = fixed_deps(available=AvailableMemory(LIMIT, "test"))
    if models_dir is not None:
        deps = replace(deps, build_catalog=lambda: Catalog((), models_dirs=(models_dir,)))
    options.setdefault("max_tokens", 8192)
    return build_app(deps, model=str(model), memory_limit=LIMIT, **options)


def shown(app: VramscopeApp) -> tuple[GgufView, str, str]:
    """The breakdown's llama.cpp view and both command lines on screen."""
    view = app.explorer.query_one(Breakdown).gguf
    assert view is not None, "no llama.cpp load on screen"
    lines = app.explorer.query_one(CommandLinesView)
    return view, lines.vramscope, lines.mlxcel


def screen_text(app: VramscopeApp) -> str:
    breakdown = app.explorer.query_one(Breakdown)
    width = breakdown.size.width
    return "\n".join(breakdown.render_line(y).text for y in range(breakdown.size.height))[
        : width * 100
    ]


def inspect_json(capsys: pytest.CaptureFixture[str], line: str) -> dict[str, Any]:
    """`inspect --json` with the flags of the explorer's own `vramscope inspect` line."""
    words = shlex.split(line)
    assert words[:2] == ["vramscope", "inspect"]
    out, err = io.StringIO(), io.StringIO()
    # Textual holds sys.stdout while the app runs: the command's own streams here.
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*words[1:], "--json"])
    assert code == 0, err.getvalue()
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def assert_same_as_inspect(app: VramscopeApp, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """Every figure of the breakdown is `inspect --json`'s for the same flags."""
    view, vramscope, llama_server = shown(app)
    load = inspect_json(capsys, vramscope)["load"]
    assert view.total_bytes == load["total_bytes"]
    places = {d["placement"]: d for d in load["devices"]}
    assert view.device_total == (places["device"]["total_bytes"] if "device" in places else None)
    assert view.host_total == places["host"]["total_bytes"]
    for row in view.rows:
        for place, got in (("device", row.device_bytes), ("host", row.host_bytes)):
            terms = [t for t in places.get(place, {"terms": []})["terms"] if t["kind"] == row.kind]
            assert got == (sum(t["bytes"] for t in terms) if terms else None), (row.kind, place)
    assert view.fits is load["fits"]
    assert llama_server == load["llama_server"]
    text = screen_text(app)
    held = format_bytes_short(load["held_bytes"])
    assert f"the device's share, {held}" in text or f"(host only), {held}" in text
    if load["largest_gpu_layers"] is not None and load["largest_gpu_layers"] > 0:
        assert f"largest --n-gpu-layers that fits: {load['largest_gpu_layers']} of" in text
    summary = app.explorer.query_one("#summary").text
    assert summary.startswith(" FITS " if load["fits"] else " DOES NOT FIT ")
    assert held in summary
    return load


@pytest.fixture
def gemma3(tmp_path: Path) -> Path:
    """A gemma3 (sliding window 192, tied embeddings) of 7 offloadable layers."""
    return write_model(tmp_path / "models" / "gemma3-GGUF", "gemma3")


async def test_each_llama_cpp_control_moves_the_load_as_inspect_says(
    gemma3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = app_on(gemma3)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        state = app.explorer.state
        assert state.llama_cpp
        before = assert_same_as_inspect(app, capsys)
        # Each key: the question changes, the figures follow inspect's for its flags.
        steps: list[tuple[tuple[str, ...], str, str]] = [
            (("g", "left", "left", "left"), "--n-gpu-layers", "device_total"),  # 5 of 7
            (("K", "K"), "--cache-type-k", "kv_bytes"),  # f16 -> bf16 -> q8_0
            (("V", "V", "V", "V"), "--cache-type-v", "kv_bytes"),  # ... q4_0 -> f32
            (("P", *"4", "enter"), "--parallel", "output_bytes"),
            (("F",), "--flash-attn", "compute_bytes"),
            (("U", "right"), "--ubatch-size", "compute_bytes"),  # 512 -> 1024
            (("t", *"2048", "enter"), "--max-tokens", "kv_bytes"),
        ]
        for keys, flag, moved in steps:
            await pilot.press(*keys, "escape")  # then back to the token slider
            await handled(pilot)
            _, line, _ = shown(app)
            assert flag in shlex.split(line), (flag, line)
            after = assert_same_as_inspect(app, capsys)
            if moved == "device_total":
                assert after["devices"][0]["total_bytes"] < before["devices"][0]["total_bytes"]
            else:
                assert after[moved] != before[moved], (flag, moved)
            before = after
        state = app.explorer.state
        assert state.gpu_layers == 5  # all, 7, 6, 5
        assert (state.cache_type_k, state.cache_type_v) == (KvCacheType.Q8_0, KvCacheType.F32)
        assert state.parallel == 4 and state.flash_attn is FlashAttn.OFF
        assert state.max_tokens == 2048 and state.ubatch_size == 1024


async def test_a_load_that_does_not_fit_names_the_largest_gpu_layers_and_context(
    gemma3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = app_on(gemma3)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        load = assert_same_as_inspect(app, capsys)
        assert load["fits"] is False and load["largest_gpu_layers"] == 4
        text = screen_text(app)
        assert "largest --n-gpu-layers that fits: 4 of 7 at 8,192 tokens" in text
        tokens = load["largest_context"]["tokens"]
        assert f"largest context by the load: {tokens:,} tokens (trained: 8,192)" in text
        assert "mlxcel's estimate does not apply to a GGUF" in text


async def test_the_llama_server_line_reads_back_as_the_same_question(gemma3: Path) -> None:
    app = app_on(gemma3)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("g", "left", "left", "escape", "K", "K", "P", "3", "enter")
        await handled(pilot)  # -ngl 6, K q8_0, 3 slots
        state = app.explorer.state
        _, _, line = shown(app)
        assert line.startswith("llama-server -m ")
        read = read_llama_command(shlex.split(line))
        assert read is not None
        assert read.model == str(gemma3)
        assert read.tokens == state.max_tokens
        assert read.options == llama_options(state)
        assert read.options.n_gpu_layers == 6
        assert read.options.cache_type_k is KvCacheType.Q8_0
        assert read.options.parallel == 3


async def test_mlxcels_controls_give_way_to_llama_cpps_and_come_back(gemma3: Path) -> None:
    app = app_on(gemma3)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        controls = app.explorer.query_one(Controls)

        def shown(widget_id: str) -> bool:
            return displayed(controls, f"#{widget_id}")

        assert shown("gpu-layers") and shown("parallel") and shown("cache-k-row")
        assert not shown("inflight") and not shown("batch") and not shown("kv-row")
        await type_keys(pilot, "b")  # mlxcel's Batch: idle on a GGUF
        assert app.explorer.state.batch == 1
        # A safetensors model: mlxcel's controls are back, llama.cpp's gone.
        await type_keys(pilot, "/Qwen2.5-7B-Instruct-4bit\r")
        await wait_for(pilot, lambda: not app.explorer.state.llama_cpp, "the MLX model")
        await settle(pilot)
        assert shown("inflight") and shown("batch") and shown("kv-row")
        assert not shown("gpu-layers") and not shown("cache-k-row")
        assert app.explorer.query_one(Breakdown).view is not None  # mlxcel's table


async def test_gguf_files_are_listed_and_a_pick_opens_one(tmp_path: Path, gemma3: Path) -> None:
    models = gemma3.parent.parent
    write_model(models / "llama-GGUF", "llama")
    app = app_on("mlx-community/Meta-Llama-3.1-8B-Instruct-4bit", models_dir=models)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert not app.explorer.state.llama_cpp
        options = app.explorer.query_one("#models OptionList")
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]  # type: ignore[attr-defined]
        assert any(p.startswith("GGUF files (llama.cpp)") for p in prompts)
        assert any("golden-llama.gguf" in p and "GGUF" in p and "7.1 MiB" in p for p in prompts)
        # The context length the header names (8,192), read before the pick, and the
        # size said to be the files on disk.
        rows = [p for p in prompts if "golden-" in p]
        assert len(rows) == 2 and all("8K ctx" in p for p in rows), rows
        listed = app.explorer.loader.gguf_entries
        assert {e.weights_source for e in listed} == {WeightsSource.GGUF_FILE_SIZE}
        assert {e.max_position_embeddings for e in listed} == {8192}
        assert not displayed(app.explorer, "#gpu-layers")
        await type_keys(pilot, "/golden-llama\r")
        await wait_for(pilot, lambda: app.explorer.state.llama_cpp, "the GGUF picked")
        await settle(pilot)
        view, _, line = shown(app)
        assert str(models / "llama-GGUF" / "golden-llama.gguf") in line
        assert view.rows[0].kind == "weights"
        # llama.cpp's rows came with it (an MLX model's session never mounts them), the
        # layers slider over this GGUF's layers and the output layer.
        gguf = app.explorer.loader.gguf
        assert gguf is not None
        layers = app.explorer.query_one("#gpu-layers", SliderField)
        assert layers.display and layers.stops == layer_stops(gguf.model.layer_count)
        assert len(layers.stops) > 3


async def test_a_bad_gguf_is_one_line_and_the_model_on_screen_stays(
    tmp_path: Path, gemma3: Path
) -> None:
    models = gemma3.parent.parent
    bad = models / "bad-GGUF" / "broken-Q4_0.gguf"
    bad.parent.mkdir()
    bad.write_bytes(gemma3.read_bytes()[:200])  # a header cut short
    write_model(models / "llama-GGUF", "llama")
    app = app_on(gemma3, models_dir=models)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        view, _, _ = shown(app)
        await type_keys(pilot, "/broken\r")
        await settle(pilot)
        status = app.explorer.query_one("#status").text
        assert "⚠" in status and "broken-Q4_0.gguf" in status and "truncated" in status
        assert app.explorer.state.model == str(gemma3)  # the model on screen stayed
        assert shown(app)[0] == view
        assert "golden-gemma3.gguf" in app.explorer.query_one("#summary").text
        # A good one afterwards clears the line.
        app.explorer.query_one(ModelList).filter_box.value = ""
        await type_keys(pilot, "\x1b/golden-llama\r")
        await wait_for(pilot, lambda: "golden-llama" in app.explorer.state.model, "the pick")
        await settle(pilot)
        assert "⚠" not in app.explorer.query_one("#status").text
        assert "golden-llama.gguf" in app.explorer.query_one("#summary").text


async def test_explore_of_a_bad_gguf_says_why_in_place(tmp_path: Path) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 16)
    app = app_on(bad)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        breakdown = app.explorer.query_one(Breakdown)
        assert breakdown.view is None and breakdown.gguf is None
        assert "model.gguf" in app.explorer.query_one("#status").text
        assert "Cannot read this model" in screen_text(app)


async def test_a_quantized_v_without_flash_attention_is_refused_as_llama_cpp_does(
    gemma3: Path,
) -> None:
    app = app_on(gemma3)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await type_keys(pilot, "VVVF")  # V q8_0, then flash attention off
        assert app.explorer.query_one(Breakdown).gguf is None
        assert "needs --flash-attn on" in screen_text(app)
        await type_keys(pilot, "F")  # on again: the load is back
        assert app.explorer.query_one(Breakdown).gguf is not None


async def test_every_llama_cpp_key_reaches_its_control_on_a_gguf(gemma3: Path) -> None:
    """A jump key puts focus on its control, a cycling key shows the next choice; mlxcel's
    keys are idle."""
    from tui.model.control_specs import KeyAction, keyed
    from tui.widgets.segmented import Segmented

    app = app_on(gemma3)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        controls = app.explorer.query_one(Controls)
        for spec in [s for s in keyed(KeyAction.JUMP) if s.gguf_only]:
            await type_keys(pilot, spec.key)
            assert app.screen.focused is controls.focus_target(spec) is not None, spec.id
        await type_keys(pilot, "\x1b")
        for spec in [s for s in keyed(KeyAction.CYCLE) if s.gguf_only]:
            before = app.explorer.state
            await type_keys(pilot, spec.key)
            state = app.explorer.state
            assert spec.value(state) == spec.next_value(before), spec.id
            assert app.explorer.query_one(f"#{spec.id}", Segmented).index == spec.index(state)
        before = app.explorer.state
        await type_keys(pilot, "kdsw")  # mlxcel's KV dtype, the split, the engine: idle
        assert app.explorer.state == before


async def test_the_fits_view_lists_fits_gguf_rows_and_enter_opens_one(
    gemma3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`f` on a GGUF: the GGUF table is `vramscope fit`'s for the same flags, row for row;
    Enter on a row that does not fit whole opens it with the most layers that fit."""
    from tui.screens.fits_screen import FitsScreen
    from tui.widgets.fit_table_view import FitTableView

    models = gemma3.parent.parent
    write_model(models / "llama-GGUF", "llama")
    app = app_on(gemma3, models_dir=models)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("F")  # flash attention off: a flag the rows must follow
        await handled(pilot)
        await pilot.press("U", "left", "escape")  # --ubatch-size 256: the compute buffer
        await handled(pilot)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FitsScreen), "the Fits view")
        fits = app.screen
        assert isinstance(fits, FitsScreen)
        await wait_for(pilot, lambda: bool(fits.gguf) and fits.done, "the GGUF rows")
        command = shlex.split(fits.inputs.command)
        assert "--flash-attn" in command
        assert command[command.index("--ubatch-size") + 1] == "256"
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*command[1:], "--models-dir", str(models), "--json"])
        assert code in (0, 1), err.getvalue()
        rows = json.loads(out.getvalue())["gguf_rows"]
        assert [(r["file"], r["total_bytes"], r["held_bytes"]) for r in rows] == [
            (p.row.file, p.row.answer.load.total_bytes, p.row.answer.held_bytes)
            for p in fits.gguf
            if p.row.answer is not None
        ]
        assert [r["largest_gpu_layers"] for r in rows] == [
            p.row.answer.gpu_layers for p in fits.gguf if p.row.answer is not None
        ]
        table = fits.query_one("#fits-gguf", FitTableView)
        assert table.display and len(table.rows) == len(rows) == 2
        # Enter on the gemma3 row (it does not fit whole in 24 MiB): opened at its -ngl.
        row = next(i for i, p in enumerate(fits.gguf) if "gemma3" in p.row.file)
        pick = fits.gguf[row]
        assert pick.gpu_layers is not None
        table.focus()
        for _ in range(row):
            await pilot.press("down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, FitsScreen), "the explorer")
        await settle(pilot)
        state = app.explorer.state
        assert state.model == pick.row.file and state.gpu_layers == pick.gpu_layers
        view, _, _ = shown(app)
        assert view.fits is True  # at the most layers that fit, it fits


def test_explore_takes_the_model_as_inspect_does(tmp_path: Path) -> None:
    """`vramscope explore FILE.gguf`: the model as a positional, as `inspect FILE.gguf`."""
    from tui.cli import build_parser
    from tui.commands.shared.estimate_args import launch_options

    args = build_parser().parse_args(["explore", "models/x-Q4_0.gguf"])
    assert args.model_given == "models/x-Q4_0.gguf"
    args.model = args.model_given  # what `explore` does before it builds the options
    assert launch_options(args).model == "models/x-Q4_0.gguf"


HUB_REPO = "test-org/Tiny-GGUF"


@pytest.fixture
def gguf_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A local Hub serving a GGUF repo (three quants); HF_ENDPOINT points at it, caches
    are this test's."""
    from tests.gguf_models import write_model as write_quant

    server = FakeHub().start()
    folder = tmp_path / "published"
    for quant in ("Q4_0", "Q8_0", "F16"):
        write_quant(folder, "qwen3", weight_type=quant)
    server.add(HUB_REPO, sparse_from_folder(folder))
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
    try:
        yield server
    finally:
        server.stop()


async def test_a_hub_quant_opens_from_its_header_with_an_hf_line(
    gguf_hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`explore REPO:QUANT`: the header by Range (never the weights), llama.cpp's load
    as `inspect REPO:QUANT` gives it, and `llama-server -hf REPO:QUANT`."""
    from tui.deps import builtin_deps

    deps = builtin_deps(AvailableMemory(LIMIT, "test"), ROCM_MACHINE, hub=True)
    app = build_app(deps, model=f"{HUB_REPO}:Q8_0", memory_limit=LIMIT, max_tokens=4096)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.explorer.state.llama_cpp
        _, _, line = shown(app)
        assert line.startswith(f"llama-server -hf {HUB_REPO}:Q8_0 -c 4096 ")
        size = (tmp_path / "published" / "qwen3-Q8_0.gguf").stat().st_size
        assert gguf_hub.bytes_sent < size  # the header, not the file
        assert f"{HUB_REPO}:Q8_0" in app.explorer.query_one("#summary").text
        assert_same_as_inspect(app, capsys)  # `inspect REPO:QUANT`, from the store now


async def test_m_on_a_gguf_offers_llama_cpps_own_command_for_the_question(gemma3: Path) -> None:
    """vramscope's engines measure safetensors models: `m` on a GGUF asks for your command
    (as `M`), offering llama.cpp's own for the question on screen, one token long."""
    from textual.widgets import Input

    from tui.screens.command_screen import CommandScreen

    app = app_on(gemma3)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("F", "m")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandScreen), "your command")
        line = app.screen.query_one(Input).value
        read = read_llama_command(shlex.split(line))
        assert read is not None and read.program == "llama-completion"
        # "all" layers is written as their count, 7 (as inspect's llama-server line).
        asked = replace(llama_options(app.explorer.state), n_gpu_layers=7)
        assert read.options == asked
        assert read.options.flash_attn is FlashAttn.OFF
        assert read.tokens == 8192 and read.model == str(gemma3)


async def test_a_ggufs_palette_offers_llama_cpps_controls_and_each_sets_it(gemma3: Path) -> None:
    from tui.model.control_specs import CONTROLS, KeyAction

    app = app_on(gemma3)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert "Copy the llama-server command" in commands
        assert "Copy the mlxcel command" not in commands
        for spec in CONTROLS:
            name = spec.palette_values or spec.palette_name
            if spec.mlx_only:
                assert not any(t.startswith(f"{name}: ") for t in commands), spec.id
                continue
            jump = f"Go to {spec.palette_name} ({spec.key})"
            if spec.action is KeyAction.JUMP:
                assert any(t.startswith(jump) for t in commands), spec.id
            if not spec.gguf_only:
                continue
            for choice in spec.choices:
                (title,) = (t for t in commands if t == f"{name}: {choice.label}")
                commands[title].callback()
                await handled(pilot)
                assert spec.value(app.explorer.state) == choice.value, title


async def test_the_mouse_sets_llama_cpps_controls(gemma3: Path) -> None:
    """A click on a cache type or flash attention picks it; a click on the layers slider's
    ends gives 0 and all."""
    from tui.widgets.segmented import Segmented
    from tui.widgets.slider_field import SliderField

    app = app_on(gemma3)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        k = app.explorer.query_one("#cache-k", Segmented)
        await pilot.click(k, offset=(19, 0))  # " f32 " " f16 " " bf16 ", then " q8_0 "
        await handled(pilot)
        assert app.explorer.state.cache_type_k is KvCacheType.Q8_0
        fa = app.explorer.query_one("#flash-attn", Segmented)
        await pilot.click(fa, offset=(6, 0))  # " on ", then " off "
        await handled(pilot)
        assert app.explorer.state.flash_attn is FlashAttn.OFF
        layers = app.explorer.query_one("#gpu-layers", SliderField).slider
        await pilot.click(layers, offset=(0, 0))
        await handled(pilot)
        assert app.explorer.state.gpu_layers == 0
        view, _, line = shown(app)
        assert view.device_total is None and " -ngl 0 " in line  # llama.cpp on the host
        await pilot.click(layers, offset=(layers.content_region.width - 1, 0))
        await handled(pilot)
        assert shown(app)[0].device_total is not None and " -ngl 7 " in shown(app)[2]


def test_a_gguf_row_without_a_peeked_length_says_it_is_read_on_open(tmp_path: Path) -> None:
    from core.catalog.entry import ORIGIN_GGUF, CatalogEntry
    from tui.widgets.model_list import entry_prompt

    entry = CatalogEntry(
        "m/x-Q4_0.gguf", ORIGIN_GGUF, "GGUF Q4_0", 1 << 30,
        WeightsSource.GGUF_FILE_SIZE, None, None, True, tmp_path / "x-Q4_0.gguf",
    )  # fmt: skip
    assert str(entry_prompt(entry, False, 60)).endswith("1.00 GiB  ctx on open")
    assert str(entry_prompt(replace(entry, max_position_embeddings=40_960), False, 60)).endswith(
        "40K ctx"
    )


def launched(*words: str) -> Any:
    """`vramscope explore WORDS` as far as the app's options (the terminal is not asked)."""
    from tui.cli import build_parser
    from tui.commands.explore import llama_launch
    from tui.commands.shared.estimate_args import launch_options

    args = build_parser().parse_args(["explore", *words])
    args.model = args.model_given
    return llama_launch(args, launch_options(args))


async def test_explore_opens_with_llama_cpps_flags_and_its_line_repeats_them(
    gemma3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`explore FILE.gguf` with llama.cpp's flags, as `inspect` takes them: the controls
    start there, and the explorer's own `vramscope inspect` line answers the same."""
    flags = ["--n-gpu-layers", "5", "--cache-type-k", "q8_0", "--cache-type-v", "q8_0"]
    flags += ["--parallel", "2", "--flash-attn", "on", "--ctx-size", "4096"]
    flags += ["--ubatch-size", "1024"]
    options = launched(str(gemma3), *flags)
    deps = fixed_deps(available=AvailableMemory(LIMIT, "test"))
    app = VramscopeApp(deps, replace(options, memory_limit=LIMIT))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        state = app.explorer.state
        assert state.llama_cpp and state.gpu_layers == 5 and state.parallel == 2
        assert (state.cache_type_k, state.cache_type_v) == (KvCacheType.Q8_0, KvCacheType.Q8_0)
        assert state.flash_attn is FlashAttn.ON and state.max_tokens == 4096
        assert state.ubatch_size == 1024
        _, line, llama_server = shown(app)
        words = shlex.split(line)
        for flag, value in zip(flags[::2], flags[1::2], strict=True):
            if flag in ("--flash-attn",):
                continue  # llama.cpp's default, left off the line
            name = "--max-tokens" if flag == "--ctx-size" else flag
            assert words[words.index(name) + 1] == value, (flag, line)
        assert_same_as_inspect(app, capsys)
        read = read_llama_command(shlex.split(llama_server))
        assert read is not None and read.tokens == 4096
        assert read.options == replace(
            llama_options(state),
            n_gpu_layers=5,
            cache_type_k=KvCacheType.Q8_0,
            cache_type_v=KvCacheType.Q8_0,
            parallel=2,
            ubatch_size=1024,
            batch_size=2048,
        )
    # -1 and all are every layer: the slider's end.
    for ngl in ("all", "-1"):
        state, _ = initial_state(launched(str(gemma3), "-ngl", ngl), {}, ROCM_MACHINE)
        assert state.gpu_layers == ALL_GPU_LAYERS, ngl


async def test_flash_attn_auto_opens_on_and_says_so(gemma3: Path) -> None:
    """`--flash-attn auto` is counted as on, as `inspect` counts it, and the explorer
    says so in a notification once it starts (inspect's own note)."""
    options = launched(str(gemma3), "--flash-attn", "auto")
    deps = fixed_deps(available=AvailableMemory(LIMIT, "test"))
    app = VramscopeApp(deps, replace(options, memory_limit=LIMIT))
    told: list[str] = []
    real_notify = app.notify

    def notify(message: str, **kw: Any) -> None:
        told.append(message)
        real_notify(message, **kw)

    app.notify = notify  # type: ignore[method-assign]
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.explorer.state.flash_attn is FlashAttn.ON
    assert [m for m in told if "--flash-attn auto" in m] == [
        "--flash-attn auto counted as on: llama.cpp turns it on where the device supports "
        "it (ROCm, Vulkan, CUDA, Metal and the CPU do)"
    ], told
    assert launched(str(gemma3), "--flash-attn", "on").notes == ()


@pytest.mark.parametrize(
    ("flag", "why"),
    [
        (["--n-gpu-layers", "5"], "--n-gpu-layers: is llama.cpp's, for a GGUF model only"),
        (["--flash-attn", "off"], "--flash-attn: is llama.cpp's, for a GGUF model only"),
    ],
)
def test_explore_refuses_llama_cpps_flags_for_a_safetensors_model(
    flag: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["explore", "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit", *flag])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and why in err, err


@pytest.mark.parametrize(
    "flag",
    [["--batch", "2"], ["--kv-cache-mode", "int8"], ["--quant", "int4"], ["--inflight-mb", "64"]],
)
def test_explore_refuses_mlxcels_flags_for_a_gguf(
    flag: list[str], gemma3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each would do nothing to llama.cpp's load: one line naming it, never an explorer
    # that silently dropped it. With llama.cpp's flags beside it, as alone.
    for extra in ([], ["-ngl", "3"]):
        code = main(["explore", str(gemma3), *flag, *extra])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"vramscope: error: {flag[0]}: is mlxcel's; for a GGUF"), err


def test_explore_refuses_a_bad_llama_cpp_value(
    gemma3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["explore", str(gemma3), "--cache-type-k", "q9"])
    err = capsys.readouterr().err
    assert code == 2 and "--cache-type-k" in err and err.count("\n") == 1, err


async def test_explore_opens_with_llama_cpps_switches_and_each_changes_the_load(
    gemma3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--kv-unified`, `--no-kv-offload` and `--swa-full` set their controls at launch, the
    explorer's lines repeat them, and `inspect` answers the same; each key then turns its
    switch back and the load follows `inspect` again."""
    options = launched(str(gemma3), "-np", "2", "-ngl", "3", "--kv-unified", "--no-kv-offload",
                       "--swa-full")  # fmt: skip
    deps = fixed_deps(available=AvailableMemory(LIMIT, "test"))
    app = VramscopeApp(deps, replace(options, memory_limit=LIMIT))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        state = app.explorer.state
        assert (state.kv_unified, state.kv_offload, state.swa_full) == (True, False, True)
        _, line, llama_server = shown(app)
        for switch in ("--kv-unified", "--no-kv-offload", "--swa-full"):
            assert switch in shlex.split(line) and switch in shlex.split(llama_server), switch
        read = read_llama_command(shlex.split(llama_server))
        assert read is not None and read.options == replace(llama_options(state), n_gpu_layers=3)
        totals = {assert_same_as_inspect(app, capsys)["total_bytes"]}
        for key, field in (("u", "kv_unified"), ("O", "kv_offload"), ("W", "swa_full")):
            before = getattr(app.explorer.state, field)
            await type_keys(pilot, key)
            assert getattr(app.explorer.state, field) is not before, key
            totals.add(assert_same_as_inspect(app, capsys)["total_bytes"])
        _, line, _ = shown(app)
        assert not {"--kv-unified", "--no-kv-offload", "--swa-full"} & set(shlex.split(line))
    # Unified and split caches differ at -np 2 and a sliding window at --swa-full: each
    # switch moved the total (the KV offload moves the device's share, not the total).
    assert len(totals) >= 3, totals
