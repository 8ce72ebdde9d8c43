"""One descriptor per explorer control (`tui.model.control_specs`), read by the panel, the
keys, help, the palette and the command lines: every control is checked here through
its descriptor, so a new one is checked the moment it is declared."""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any

import pytest
from textual.widgets import Input, Label

from core.answer.quantization import Quantization
from core.backend import Backend
from core.estimate.available import AvailableMemory
from core.parallel.sharding import ParallelKind
from tests.tui.helpers import build_app, handled, settle, type_keys
from tui.cli import build_parser
from tui.model.command_lines import (
    DEVICE_FLAGS,
    ENVIRONMENT,
    LLAMA_CPP,
    WORKLOAD,
    fit_command,
    mlxcel_command,
    vramscope_command,
)
from tui.model.control_specs import (
    CONTROLS,
    DEVICES,
    KV_DTYPE,
    MAX_TOKENS,
    PER_DEVICE,
    QUANTIZE,
    SPLIT,
    KeyAction,
    WidgetKind,
    keyed,
    next_value,
)
from tui.model.split_words import launch_command, with_plan_flag
from tui.model.state import ExplorerState, MemoryChoice
from tui.screens.explorer_screen import ExplorerScreen
from tui.screens.help_screen import control_rows, help_keys
from tui.widgets.controls import Controls
from tui.widgets.segmented import Segmented
from tui.widgets.slider_field import SliderField

AVAILABLE = AvailableMemory(24 << 30, "test")
ON_THEIR_OWN_LINES = {"engine", "quantize_as", "split", "device_memory", "memory"}
"""Controls whose flag is not one of the inspect line's plain flags: `--engine` is
`measure`'s, "Quantize as" turns the line into `vramscope fit --quantizations`, TP/PP
adds `--tp N`/`--pp N` (N: Devices), Per device and Available are `--memory-limit`'s
(and `--preset`'s) own rules."""


def off_default(spec: Any) -> object:
    """A value of the control other than its default."""
    if spec.choices:
        return next(c.value for c in spec.choices if c.value != spec.default)
    return next(v for v in reversed(spec.stops) if v != spec.default)


def test_every_control_has_its_own_field_id_and_key() -> None:
    assert len({s.field for s in CONTROLS}) == len({s.id for s in CONTROLS}) == len(CONTROLS)
    keys = [s.key for s in CONTROLS if s.key]
    assert len(keys) == len(set(keys))
    state = ExplorerState()
    for spec in CONTROLS:
        assert spec.value(state) == spec.default
        assert spec.help and spec.label
        assert (spec.key != "") == (spec.action is not None)


@pytest.mark.parametrize("spec", keyed(KeyAction.CYCLE), ids=lambda s: s.id)
def test_a_cycling_key_goes_through_every_choice_and_back(spec: Any) -> None:
    state = ExplorerState()
    seen = []
    for _ in spec.choices:
        state = replace(state, **{spec.field: next_value(state, spec.field)})
        seen.append(spec.value(state))
    assert seen[-1] == spec.value(ExplorerState())
    assert sorted(map(str, seen)) == sorted(str(c.value) for c in spec.choices)


def test_split_and_quantize_as_are_typed_kinds() -> None:
    state = ExplorerState()
    assert state.split is ParallelKind.TENSOR and state.quantize_as is Quantization.STORED
    assert next_value(state, "split") is ParallelKind.PIPELINE
    assert {c.value for c in QUANTIZE.choices} == set(Quantization)
    assert {c.value for c in SPLIT.choices} == set(ParallelKind)


@pytest.mark.parametrize("spec", [*WORKLOAD, *DEVICE_FLAGS, *ENVIRONMENT], ids=lambda s: s.id)
def test_a_control_off_its_default_reads_back_from_the_command_line(spec: Any) -> None:
    """The vramscope line, run as written, asks the question on screen: its flags parse
    back to the state's values; mlxcel's line carries the same value by flag or variable."""
    state = spec.with_value(ExplorerState(backend=Backend.ROCM), off_default(spec))
    line = vramscope_command(state, AVAILABLE, "some/model")
    words = shlex.split(line)
    env = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))
    args = build_parser().parse_args(
        [w for w in words if w not in {f"{k}={v}" for k, v in env.items()}][1:]
    )
    assert args.max_tokens == state.max_tokens and args.batch == state.batch
    assert (args.kv_cache_mode == "int8") is state.kv_int8
    assert args.backend == state.backend.value
    if state.backend.has_inflight_reserve:
        assert int(args.inflight_mb) == state.inflight_mib
    else:  # only ROCm builds reserve it: no flag to give
        assert args.inflight_mb is None
    assert float(env.get("MLXCEL_HEADROOM_FACTOR", "1.2")) == state.headroom_factor
    mlxcel = mlxcel_command(state, AVAILABLE, "some/model")
    assert spec.flag is not None
    word = (
        spec.choice(state).word
        if spec.kind is WidgetKind.CHOICE
        else spec.flag.word(spec.value(state))
    )
    if spec.flag.mlxcel:
        assert f"{spec.flag.name} {word}" in mlxcel
    elif spec.flag.env:
        assert f"{spec.flag.env}={word}" in mlxcel
    else:  # vramscope's own (the backend is mlxcel's build, not a flag of its)
        assert spec.flag.name not in mlxcel


def test_every_control_with_a_flag_is_spelled_by_a_command_line() -> None:
    on_inspect = {s.field for s in (*WORKLOAD, *LLAMA_CPP, *DEVICE_FLAGS, *ENVIRONMENT)}
    flagged = {s.field for s in CONTROLS if s.flag is not None}
    assert flagged - on_inspect == ON_THEIR_OWN_LINES
    actions = {
        option: action
        for group in build_parser()._subparsers._group_actions
        for sub in group.choices.values()
        for action in sub._actions
        for option in action.option_strings
    }
    for spec in CONTROLS:
        for flag in spec.flags:
            assert flag in actions or (spec.flag is not None and flag == spec.flag.env), flag
            known = getattr(actions.get(flag), "choices", None)
            if known is not None and spec.kind is WidgetKind.CHOICE:
                # The words the control writes are words the flag takes.
                assert {c.word for c in spec.choices} <= set(known), flag


def test_the_split_controls_words_are_the_split_lines() -> None:
    state = ExplorerState(devices=4, split=ParallelKind.PIPELINE, max_tokens=4096)
    assert with_plan_flag("vramscope inspect m", state) == "vramscope inspect m --pp 4"
    assert launch_command(state, "m").split()[4] == "4"
    assert launch_command(state, "m").endswith("--pipeline")
    tp = replace(state, split=SPLIT.next_value(state))
    assert "--pipeline" not in launch_command(tp, "m")
    assert with_plan_flag("x", tp) == "x --tp 4"
    quantized = fit_command(state, AVAILABLE, Quantization.MLX_4BIT.word)
    assert quantized.startswith("vramscope fit --quantizations mlx-4bit --max-tokens 4096")


def test_help_has_a_row_for_every_control_and_every_key_in_the_panels_order() -> None:
    # A safetensors model's help lists mlxcel's controls and the shared ones, a GGUF's
    # llama.cpp's and the shared ones: together every control, each in the panel's order.
    mlx, gguf = control_rows(), control_rows(llama_cpp=True)
    assert [label for label, _ in mlx] == [s.label for s in CONTROLS if not s.gguf_only]
    assert [label for label, _ in gguf] == [s.label for s in CONTROLS if not s.mlx_only]
    assert {label for label, _ in (*mlx, *gguf)} == {s.label for s in CONTROLS}
    for llama_cpp in (False, True):
        keys = " ".join(k for k, _ in help_keys(llama_cpp)).split()
        for spec in CONTROLS:
            if spec.key and (spec.gguf_only if llama_cpp else not spec.gguf_only):
                assert spec.key in keys, spec.id
            elif spec.key and (spec.mlx_only if llama_cpp else spec.gguf_only):
                assert spec.key not in keys, spec.id
    jumps = [b for b in ExplorerScreen.BINDINGS if "jump(" in getattr(b, "action", "")]
    assert {b.key for b in jumps} == {s.key for s in keyed(KeyAction.JUMP)} | {"slash"}


async def test_every_key_reaches_its_control() -> None:
    """A jump key puts focus on its control; a cycling key shows the next choice."""
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.explorer.update(devices=2)  # the split's rows show
        await settle(pilot)
        controls = app.screen.query_one(Controls)
        # A safetensors model: llama.cpp's keys are idle (tests/tui/test_gguf_explorer.py).
        jumps = [s for s in keyed(KeyAction.JUMP) if not s.gguf_only]
        for spec in jumps:  # Per device last: letters are text in its box
            await type_keys(pilot, spec.key)
            assert app.screen.focused is controls.focus_target(spec), spec.id
        await type_keys(pilot, "\x1b")
        for spec in [s for s in keyed(KeyAction.CYCLE) if not s.gguf_only]:
            before = app.explorer.state
            await type_keys(pilot, spec.key)
            state = app.explorer.state
            assert spec.value(state) == spec.next_value(before), spec.id
            shown = app.screen.query_one(f"#{spec.id}", Segmented)
            assert shown.index == spec.index(state), spec.id


async def test_the_panel_shows_every_control_from_its_descriptor() -> None:
    """Every control from its descriptor, in its order. The rows the state shows are
    there from the start; the others (a split's, llama.cpp's) are mounted when the state
    first shows them, each in its descriptor's place."""
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        controls = app.screen.query_one(Controls)

        def labels() -> list[str]:
            shown = (str(label.render()).strip() for label in controls.query(Label))
            return [label for label in shown if label]

        def own_labels(state: ExplorerState) -> list[str]:
            return [
                s.label
                for s in CONTROLS
                if not s.joins_row and (not s.split_only or state.devices > 1) and s.applies(state)
            ]

        assert labels() == own_labels(app.explorer.state)
        # One device: the split's rows are out, and its jump says why.
        assert not controls.mounted(DEVICES) and not app.screen.query(f"#{DEVICES.row}")
        await type_keys(pilot, PER_DEVICE.key)
        assert not isinstance(app.screen.focused, Input)
        await type_keys(pilot, "\x1b")
        app.explorer.update(devices=2)
        await settle(pilot)
        assert labels() == own_labels(app.explorer.state)
        assert app.screen.query_one(f"#{DEVICES.row}").display
        app.explorer.update(llama_cpp=True)  # as a GGUF's read sets it
        await settle(pilot)
        assert labels() == [s.label for s in CONTROLS if not s.joins_row]  # mlxcel's stay, hidden
        assert all(controls.mounted(spec) for spec in CONTROLS)
        for spec in CONTROLS:
            widget = app.screen.query_one(f"#{spec.id}")
            if spec.kind is WidgetKind.SLIDER:
                assert isinstance(widget, SliderField) and widget.stops[0] == spec.stops[0]
            elif spec.kind is WidgetKind.CHOICE:
                assert isinstance(widget, Segmented)
                assert widget.options == tuple(c.label for c in spec.choices)
            elif spec.kind is WidgetKind.SIZES:
                assert isinstance(widget, Input)


async def test_every_palette_entry_of_a_control_sets_it() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for spec in CONTROLS:
            if spec.gguf_only:  # llama.cpp's: a GGUF's palette (tests/tui/test_gguf_explorer.py)
                assert not any(t.startswith(f"{spec.palette_name}") for t in commands)
                assert not any(f"Go to {spec.palette_name} " in t for t in commands)
                continue
            if spec.action is KeyAction.JUMP:
                assert any(
                    t.startswith(f"Go to {spec.palette_name} ({spec.key})") for t in commands
                )
            name = spec.palette_values or spec.palette_name
            for choice in spec.choices:
                (title,) = (
                    t
                    for t in commands
                    if t.startswith(f"{name}: ")
                    and " ".join(t[len(name) + 2 :].split()) == (choice.palette or choice.label)
                )
                commands[title].callback()
                await handled(pilot)
                value = spec.value(app.explorer.state)
                assert value == choice.value, (title, value)
        assert app.explorer.state.memory != MemoryChoice()  # the last preset stayed


async def test_kv_dtype_reads_the_same_everywhere() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await type_keys(pilot, KV_DTYPE.key)
        state = app.explorer.state
        assert state.kv_int8 and state.workload().kv_cache_mode.value == KV_DTYPE.choice(state).word
        assert app.screen.query_one(f"#{KV_DTYPE.id}", Segmented).index == 1
        assert "--kv-cache-mode int8" in vramscope_command(state, AVAILABLE, "m")
        await type_keys(pilot, "\x1b" + MAX_TOKENS.key + "4096\r")
        assert app.explorer.state.max_tokens == 4096
