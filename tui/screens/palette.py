"""Command-palette entries (Ctrl+P): every control's common values, one search away; the
controls' entries are their descriptors' (`tui.model.control_specs`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial

from textual.app import SystemCommand

from tui.model.control_specs import CONTROLS, ControlSpec, KeyAction, keyed
from tui.screens.explorer_screen import ExplorerScreen
from tui.screens.focus_keys import FILTER


def sortable(label: str) -> str:
    """`Apple M-series  16 GB`: sizes right-aligned, so the palette's A-Z order (it sorts
    its list by title) is also the numeric one (16 GB before 128 GB)."""
    return re.sub(r"(\d+) (GB|GiB)$", lambda m: f"{int(m[1]):>3} {m[2]}", label)


FILTER_JUMP = "Models: filter the list (/)"
"""The jump to the model filter, which is no control."""


def control_commands(screen: ExplorerScreen) -> Iterator[SystemCommand]:
    """Each control's entries, from its descriptor: a jump to it (where it has a jump
    key), and one entry per choice (a slider's: its common stops); of the controls of the
    model on screen (llama.cpp's on a GGUF, mlxcel's on a safetensors model)."""
    state = screen.state
    for spec in keyed(KeyAction.JUMP):
        if not spec.applies(state):
            continue
        yield SystemCommand(
            f"Go to {spec.palette_name} ({spec.key}){spec.palette_note}",
            "move focus to the control",
            partial(screen.action_jump, spec.id),
        )
    yield SystemCommand(
        f"Go to {FILTER_JUMP}", "move focus to the control", partial(screen.action_jump, FILTER)
    )
    for spec in CONTROLS:
        if not spec.applies(state):
            continue
        name = spec.palette_values or spec.palette_name
        for choice in spec.choices:
            yield SystemCommand(
                f"{name}: {sortable(choice.palette or choice.label)}",
                choice.palette_help or spec.palette_help,
                partial(_set, screen, spec, choice.value),
            )


def _set(screen: ExplorerScreen, spec: ControlSpec, value: object) -> None:
    screen.state = spec.with_value(screen.state, value)


def explorer_commands(
    screen: ExplorerScreen, show_help: Callable[[], None]
) -> Iterator[SystemCommand]:
    """Every control (a jump to it, and its common values), copy, measuring, history, the
    verdict's basis, recalibrating, what fits, help."""
    yield from control_commands(screen)
    yield SystemCommand(
        "Copy the vramscope command",
        "vramscope inspect ...",
        partial(screen.action_copy, "vramscope"),
    )
    if screen.state.llama_cpp:  # a GGUF: the second line is llama-server's
        yield SystemCommand(
            "Copy the llama-server command",
            "llama-server -m FILE ... (C)",
            partial(screen.action_copy, "mlxcel"),
        )
    else:
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
    yield SystemCommand(
        "What fits on this device (f)",
        "every model and quantization for the settings on screen, as vramscope fit ranks them",
        screen.action_fits,
    )
    yield SystemCommand("Keys and controls", "the help screen", show_help)
