"""The command lines that reproduce what the explorer shows.

`vramscope inspect ...` prints the same banner here; the `mlxcel inspect ...`
line, with `MLX_ROCM_MAX_INFLIGHT_MB` in front on ROCm, is what to run on the
machine itself. Every value that differs from the defaults is spelled out;
available memory from a preset is `--preset NAME` for vramscope (mlxcel has no
presets: its line gets the exact byte count), and a typed size an exact byte count.
Each control's flag, variable and words are its descriptor's (`tui.model.control_specs`);
the order of the flags here is mlxcel's.
"""

from __future__ import annotations

import shlex

from core.estimate.activation import ACTIVATION_BUFFER_MULT, ACTIVATION_MULT_ENV
from core.estimate.available import AvailableMemory
from core.estimate.estimate import QuantHint
from tui.model.control_specs import (
    AVAILABLE,
    BACKEND,
    BATCH_SIZE,
    CONTROLS,
    INFLIGHT_MIB,
    KV_DTYPE,
    MAX_TOKENS,
    OVERHEAD_FACTOR,
    QUANTIZE,
    ControlSpec,
    WidgetKind,
)
from tui.model.presets import DETECTED, DEVICE_KEYS, PRESETS_BY_KEY
from tui.model.state import ExplorerState

WORKLOAD = (MAX_TOKENS, BATCH_SIZE, KV_DTYPE)
"""The controls whose flags `mlxcel inspect` takes too, in its order."""
DEVICE_FLAGS = (BACKEND, INFLIGHT_MIB)
"""vramscope's flags of the device after them: the backend, then its in-flight budget."""
LLAMA_CPP = tuple(spec for spec in CONTROLS if spec.gguf_only)
"""llama.cpp's flags, under their own long names, after the workload's (a GGUF only),
in the controls' order."""
ENVIRONMENT = (OVERHEAD_FACTOR,)
"""The controls both lines give by their environment variable."""
_MEMORY_LIMIT = AVAILABLE.flag.name if AVAILABLE.flag else ""


def written(spec: ControlSpec, state: ExplorerState) -> str | None:
    """The word a control's value is on the command lines, or None where they leave it out
    (at its default, unless its flag is always written; while it does not count; for
    another kind of model: mlxcel's for a GGUF, llama.cpp's for a safetensors model)."""
    flag = spec.flag
    value = spec.value(state)
    if flag is None or not spec.active(state) or not spec.applies(state):
        return None
    if not flag.always and value == spec.default:
        return None
    return spec.choice(state).word if spec.kind is WidgetKind.CHOICE else flag.word(value)


def _flags(specs: tuple[ControlSpec, ...], state: ExplorerState) -> list[str]:
    words: list[str] = []
    for spec in specs:
        word = written(spec, state)
        if word is not None and spec.flag is not None:
            words += [spec.flag.name] if spec.flag.switch else [spec.flag.name, word]
    return words


def _env(specs: tuple[ControlSpec, ...], state: ExplorerState) -> list[str]:
    pairs = []
    for spec in specs:
        word = written(spec, state)
        if word is not None and spec.flag is not None:
            pairs.append(f"{spec.flag.env}={word}")
    return pairs


def _env_prefix(state: ExplorerState) -> list[str]:
    env = _env(ENVIRONMENT, state)
    if state.activation_mult != ACTIVATION_BUFFER_MULT:
        env.append(f"{ACTIVATION_MULT_ENV}={state.activation_mult!r}")
    return env


def _workload_flags(state: ExplorerState, quant: bool = True) -> list[str]:
    flags = _flags(WORKLOAD, state)
    if quant and not state.llama_cpp and state.quant is not QuantHint.DEFAULT:
        flags += ["--quant", state.quant.json_label]
    return flags


def fit_command(
    state: ExplorerState, available: AvailableMemory | None, quantizations: str | None = None
) -> str:
    """`vramscope fit ...` with the explorer's settings (its stored rows are this screen's
    estimates; `quantizations` narrows it to a what-if)."""
    words = ["vramscope", "fit"]
    if quantizations is not None:
        assert QUANTIZE.flag is not None
        words += [QUANTIZE.flag.name, quantizations]
    words += _workload_flags(state, quant=False)  # `fit` has no --quant: leave the hint out
    words += _flags(LLAMA_CPP, state)  # a GGUF on screen: its rows' llama.cpp flags
    words += _flags(DEVICE_FLAGS, state)
    limit = _limit(state, available)
    if state.memory.key in DEVICE_KEYS:
        words += [_MEMORY_LIMIT, DEVICE_KEYS[state.memory.key].value]
    elif limit is not None:
        words += [_MEMORY_LIMIT, str(limit)]
    return _join(_env_prefix(state), words)


def _limit(state: ExplorerState, available: AvailableMemory | None) -> int | None:
    if state.memory.key == DETECTED or available is None:
        return None
    return available.bytes


def vramscope_command(
    state: ExplorerState,
    available: AvailableMemory | None,
    model_arg: str,
    rank_limits: str | None = None,
) -> str:
    """`vramscope inspect MODEL ...` for the current state; `rank_limits` (a split's
    per-device list, `24GB,16GB`) replaces the one `--memory-limit` size."""
    words = ["vramscope", "inspect", model_arg, *_workload_flags(state)]
    words += _flags(LLAMA_CPP, state)
    words += _flags(DEVICE_FLAGS, state)
    limit = _limit(state, available)
    if rank_limits is not None:
        words += [_MEMORY_LIMIT, rank_limits]
    elif state.memory.key in PRESETS_BY_KEY:
        words += ["--preset", state.memory.key]
    elif state.memory.key in DEVICE_KEYS:  # read again on the device, as the screen does
        words += [_MEMORY_LIMIT, DEVICE_KEYS[state.memory.key].value]
    elif limit is not None:
        words += [_MEMORY_LIMIT, str(limit)]
    return _join(_env_prefix(state), words)


def mlxcel_command(state: ExplorerState, available: AvailableMemory | None, model_arg: str) -> str:
    """`MLX_ROCM_MAX_INFLIGHT_MB=... mlxcel inspect -m MODEL --max-tokens N ...`: mlxcel
    takes the device's settings from its environment."""
    env = _env((INFLIGHT_MIB,), state)
    limit = _limit(state, available)
    if limit is not None and AVAILABLE.flag is not None:
        env.append(f"{AVAILABLE.flag.env}={limit}")
    env += _env_prefix(state)
    return _join(env, ["mlxcel", "inspect", "-m", model_arg, *_workload_flags(state)])


def _join(env: list[str], words: list[str]) -> str:
    # Assignments hold only names and numbers; everything else is shell-quoted.
    return " ".join([*env, *(shlex.quote(w) for w in words)])
