"""The command lines that reproduce what the explorer shows.

`vramscope inspect ...` prints the same banner here; the `mlxcel inspect ...`
line, with `MLX_ROCM_MAX_INFLIGHT_MB` in front on ROCm, is what to run on the
machine itself. Every value that differs from the defaults is spelled out;
available memory from a preset is `--preset NAME` for vramscope (mlxcel has no
presets: its line gets the exact byte count), and a typed size an exact byte count.
"""

from __future__ import annotations

import shlex

from core.backend import Backend
from core.estimate.activation import ACTIVATION_BUFFER_MULT, ACTIVATION_MULT_ENV
from core.estimate.available import MEMORY_LIMIT_ENV, AvailableMemory
from core.estimate.estimate import QuantHint
from core.estimate.headroom import DEFAULT_HEADROOM_FACTOR, HEADROOM_FACTOR_ENV
from core.estimate.inflight import ROCM_MAX_INFLIGHT_ENV
from tui.model.presets import DETECTED, DEVICE_KEYS, PRESETS_BY_KEY
from tui.model.state import ExplorerState


def _env_prefix(state: ExplorerState) -> list[str]:
    env = []
    if state.headroom_factor != DEFAULT_HEADROOM_FACTOR:
        env.append(f"{HEADROOM_FACTOR_ENV}={state.headroom_factor!r}")
    if state.activation_mult != ACTIVATION_BUFFER_MULT:
        env.append(f"{ACTIVATION_MULT_ENV}={state.activation_mult!r}")
    return env


def _workload_flags(state: ExplorerState) -> list[str]:
    flags = ["--max-tokens", str(state.max_tokens)]
    if state.batch != 1:
        flags += ["--batch", str(state.batch)]
    if state.kv_int8:
        flags += ["--kv-cache-mode", "int8"]
    if state.quant is not QuantHint.DEFAULT:
        flags += ["--quant", state.quant.json_label]
    return flags


def fit_command(
    state: ExplorerState, available: AvailableMemory | None, quantizations: str | None = None
) -> str:
    """`vramscope fit ...` with the explorer's settings (its stored rows are this screen's
    estimates; `quantizations` narrows it to a what-if)."""
    words = ["vramscope", "fit"]
    if quantizations is not None:
        words += ["--quantizations", quantizations]
    words += _workload_flags(state)
    if state.quant is not QuantHint.DEFAULT:  # `fit` has no --quant: leave the hint out
        words = words[:-2]
    words += ["--backend", state.backend.value]
    if state.backend is Backend.ROCM:
        words += ["--inflight-mb", str(state.inflight_mib)]
    limit = _limit(state, available)
    if state.memory.key in DEVICE_KEYS:
        words += ["--memory-limit", DEVICE_KEYS[state.memory.key]]
    elif limit is not None:
        words += ["--memory-limit", str(limit)]
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
    words += ["--backend", state.backend.value]
    if state.backend is Backend.ROCM:
        words += ["--inflight-mb", str(state.inflight_mib)]
    limit = _limit(state, available)
    if rank_limits is not None:
        words += ["--memory-limit", rank_limits]
    elif state.memory.key in PRESETS_BY_KEY:
        words += ["--preset", state.memory.key]
    elif state.memory.key in DEVICE_KEYS:  # read again on the device, as the screen does
        words += ["--memory-limit", DEVICE_KEYS[state.memory.key]]
    elif limit is not None:
        words += ["--memory-limit", str(limit)]
    return _join(_env_prefix(state), words)


def mlxcel_command(state: ExplorerState, available: AvailableMemory | None, model_arg: str) -> str:
    """`MLX_ROCM_MAX_INFLIGHT_MB=... mlxcel inspect -m MODEL --max-tokens N ...`."""
    env = []
    if state.backend is Backend.ROCM:
        env.append(f"{ROCM_MAX_INFLIGHT_ENV}={state.inflight_mib}")
    limit = _limit(state, available)
    if limit is not None:
        env.append(f"{MEMORY_LIMIT_ENV}={limit}")
    env += _env_prefix(state)
    return _join(env, ["mlxcel", "inspect", "-m", model_arg, *_workload_flags(state)])


def _join(env: list[str], words: list[str]) -> str:
    # Assignments hold only names and numbers; everything else is shell-quoted.
    return " ".join([*env, *(shlex.quote(w) for w in words)])
