"""Shared test builders: the explorer over a fixed world, measured peaks, key bursts.

Nothing here reads this machine's /proc/meminfo, GPU or HF cache: the app gets
`builtin_deps` with a fixed detected backend and available memory, so Pilot
tests and snapshots are the same on every machine.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual import events
from textual.app import App
from textual.keys import _character_to_key

from core.backend import Backend, BackendChoice
from core.estimate.available import AvailableMemory
from core.measurement.result import MeasuredPeak
from tui.app import VramscopeApp, make_app
from tui.deps import AppDeps, builtin_deps
from tui.model.state import LaunchOptions

NO_GPU = BackendChoice(Backend.CPU, True, "no GPU device node found")
ROCM_MACHINE = BackendChoice(Backend.ROCM, True, "/dev/kfd (AMD KFD) present")
MEMINFO_32G = AvailableMemory(32 * 1024**3, "/proc/meminfo")
LLAMA = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
GFX1151_LIMIT = 82_463_372_083


def fixed_deps(
    machine: BackendChoice = ROCM_MACHINE, available: AvailableMemory = MEMINFO_32G, **changes: Any
) -> AppDeps:
    """The fixed world of the explorer tests (fields of AppDeps may be replaced): a ROCm
    machine (the in-flight reserve on screen) with 32 GiB available; `NO_GPU` for one
    where the explorer, as `inspect`, answers for the CPU."""
    return replace(builtin_deps(available, machine), **changes)


def build_app(deps: AppDeps | None = None, **options: Any) -> VramscopeApp:
    """The real app over the fixed world; `options` are LaunchOptions fields."""
    return make_app(deps or fixed_deps(), LaunchOptions(**options))


def peak(
    model: str = LLAMA, inflight: int = 1024, context: int = 640, **fields: Any
) -> MeasuredPeak:
    """A measured peak of `model` at context P + G = `context` (G = 128); any field may be set."""
    base: dict[str, Any] = {
        "model": model,
        "device_kind": "cpu",
        "device_name": "cpu",
        "peak_bytes": 5_000_000_000,
        "peak_kind": "rss",
        "inflight_mib": inflight,
        "prompt_tokens": context - 128,
        "gen_tokens": 128,
        "synthetic_weights": False,
        "load_seconds": 0.0,
        "prefill_tokens_per_s": 0.0,
        "decode_tokens_per_s": 0.0,
        "torch_version": "2.13.0",
    }
    return MeasuredPeak(**{**base, **fields})


_NAMED = {"\r": "enter", "\x1b": "escape", "\x7f": "backspace", "\t": "tab", "\n": "ctrl+j"}
"""`\n` is the line feed an Enter typed while the terminal is still cooked arrives as."""


def burst(app: App[Any], text: str) -> None:
    """Post every key of `text` to the app at once, as a fast typist or a paste would send
    them: none waits for the one before it to be handled (`\\r` is Enter, `\\x1b` Escape,
    `\\n` ctrl+j as Textual reads a line feed)."""
    for ch in text:
        app.post_message(events.Key(_NAMED.get(ch) or _character_to_key(ch), ch))
