"""The words of a split that need no split: the Devices choices and the command lines.

Kept apart from `parallel_view` so that one device never imports `core.parallel.plan`
(the explorer's start-up does not need it).
"""

from __future__ import annotations

import shlex

from core.parallel.sharding import ParallelKind
from tui.model.control_specs import DEVICE_CHOICES, SPLIT
from tui.model.state import ExplorerState

__all__ = ["DEVICE_CHOICES", "launch_command", "memory_limit_text", "with_plan_flag"]


def memory_limit_text(state: ExplorerState) -> str | None:
    """The list as `--memory-limit` takes it (entries trimmed), None when blank."""
    parts = [p.strip() for p in state.device_memory.split(",")]
    return ",".join(parts) if any(parts) else None


def launch_command(state: ExplorerState, model_arg: str) -> str:
    """The `mlx.launch` line that runs this split with mlx-lm itself (on one host's
    loopback; a hostfile spreads it over machines)."""
    words = [
        "mlx.launch", "--backend", "ring", "-n", str(state.devices), "--python", "python3",
        "--", "-m", "mlx_lm.benchmark", "--model", model_arg,
        "--prompt-tokens", str(max(state.max_tokens - 128, 1)), "--generation-tokens", "128",
    ]  # fmt: skip
    if state.split is ParallelKind.PIPELINE:
        words.append("--pipeline")
    return " ".join(shlex.quote(w) for w in words)


def with_plan_flag(vramscope_line: str, state: ExplorerState) -> str:
    """The `vramscope inspect ...` line with `--tp N` / `--pp N` added (the TP/PP
    control's word)."""
    return f"{vramscope_line} {SPLIT.choice(state).word} {state.devices}"
