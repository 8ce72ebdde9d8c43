"""Command-palette entries (Ctrl+P): every control's common values, one search away."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial

from textual.app import SystemCommand

from core.backend import Backend
from core.measurement.engine import ENGINE_CHOICES
from tui.model.presets import DETECTED, DEVICE_FREE, DEVICE_TOTAL, PRESETS
from tui.model.scales import INFLIGHT_STOPS
from tui.model.split_words import DEVICE_CHOICES
from tui.model.state import MemoryChoice
from tui.screens.explorer_screen import ExplorerScreen


def sortable(label: str) -> str:
    """`Apple M-series  16 GB`: sizes right-aligned, so the palette's A-Z order (it sorts
    its list by title) is also the numeric one (16 GB before 128 GB)."""
    return re.sub(r"(\d+) (GB|GiB)$", lambda m: f"{int(m[1]):>3} {m[2]}", label)


CONTROL_JUMPS: tuple[tuple[str, str], ...] = (
    ("Max tokens (t)", "tokens"),
    ("In-flight MiB (i)", "inflight"),
    ("Batch (b)", "batch"),
    ("Overhead factor (h): MLXCEL_HEADROOM_FACTOR", "factor"),
    ("Available memory (a)", "memory"),
    ("Per device available memory (p)", "device_memory"),
    ("Models: filter the list (/)", "filter"),
)
"""The controls focus can jump to, by name and key; the others are set by value below."""


def explorer_commands(
    screen: ExplorerScreen, show_help: Callable[[], None]
) -> Iterator[SystemCommand]:
    """Every control (a jump to it, and its common values), copy, measuring, history, the
    verdict's basis, recalibrating, help."""
    for words, where in CONTROL_JUMPS:
        yield SystemCommand(
            f"Go to {words}", "move focus to the control", partial(screen.action_jump, where)
        )
    for backend in Backend:
        yield SystemCommand(
            f"Backend: {backend.label}",
            "estimate for this backend (only ROCm reserves in-flight memory)",
            partial(screen.update, backend=backend),
        )
    yield SystemCommand("KV dtype: fp16", "16-bit KV cache", partial(screen.update, kv_int8=False))
    yield SystemCommand("KV dtype: int8", "8-bit KV cache", partial(screen.update, kv_int8=True))
    for mib in INFLIGHT_STOPS:
        words = "off (0): unbounded, not modelled" if mib == 0 else f"{mib} MiB"
        yield SystemCommand(
            f"In-flight budget: {words}",
            "MLX_ROCM_MAX_INFLIGHT_MB",
            partial(screen.update, inflight_mib=mib),
        )
    yield SystemCommand(
        "Available memory: this machine",
        "what mlxcel would detect here",
        partial(screen.update, memory=MemoryChoice(DETECTED)),
    )
    for key, words in ((DEVICE_TOTAL, "total"), (DEVICE_FREE, "free")):
        yield SystemCommand(
            f"Available memory: this device's {words}",
            f"--memory-limit {words}: read from sysfs, NVML/nvidia-smi, MLX or /proc/meminfo",
            partial(screen.update, memory=MemoryChoice(key)),
        )
    for preset in PRESETS:
        yield SystemCommand(
            f"Available memory: {sortable(preset.label)}",
            preset.source,
            partial(screen.use_memory, MemoryChoice(preset.key)),
        )
    yield SystemCommand(
        "Copy the vramscope command",
        "vramscope inspect ...",
        partial(screen.action_copy, "vramscope"),
    )
    yield SystemCommand(
        "Copy the mlxcel command", "mlxcel inspect ...", partial(screen.action_copy, "mlxcel")
    )
    yield SystemCommand(
        "Measure the model on screen (m)",
        "a real load in a child process: pp P + tg G at the context on screen",
        screen.action_measure,
    )
    yield SystemCommand("Cancel the measurement", "kill the run in flight", screen.measure.cancel)
    yield SystemCommand(
        "Measurement history (H)", "past runs; export the table", screen.action_history
    )
    yield SystemCommand(
        "Verdict held against: mlxcel's estimate ⇄ vramscope's calibrated total (v)",
        "which verdict is coloured and answers in the summary line",
        partial(screen.action_cycle, "calibrated_verdict"),
    )
    yield SystemCommand(
        "Recalibrate from the history (R)",
        "after m: vramscope calibrate for that run's engine, backend and device",
        screen.action_recalibrate,
    )
    for n in DEVICE_CHOICES:
        yield SystemCommand(
            f"Devices: {n}",
            "one device" if n == 1 else f"split the model over {n} devices (TP or PP)",
            partial(screen.update, devices=n),
        )
    yield SystemCommand(
        "TP/PP: TP, tensor parallel",
        "every rank holds a slice of every layer (mlx-lm shard)",
        partial(screen.update, split="tp"),
    )
    yield SystemCommand(
        "TP/PP: PP, pipeline parallel",
        "each rank holds a run of whole layers (mlx-lm pipeline)",
        partial(screen.update, split="pp"),
    )
    for engine in ENGINE_CHOICES:
        yield SystemCommand(
            f"Measure with: {engine}",
            "the engine m measures with (torch: hip_backend; mlx: real MLX)",
            partial(screen.update, engine=engine),
        )
    yield SystemCommand(
        "What fits on this device (f)",
        "every model and quantization for the settings on screen, as vramscope fit ranks them",
        screen.action_fits,
    )
    for scheme, words in (("stored", "as stored"), ("mlx-8bit", "8-bit"), ("mlx-4bit", "4-bit")):
        yield SystemCommand(
            f"Quantize as: {words}",
            "vramscope's what-if of mlx_lm.convert -q (16/32-bit float models only)",
            partial(screen.update, quantize_as=scheme),
        )
    yield SystemCommand("Keys and controls", "the help screen", show_help)
