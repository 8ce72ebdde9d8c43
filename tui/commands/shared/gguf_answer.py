"""A GGUF model's question from `inspect`'s flags: llama.cpp's options, the context,
and the available memory through the one device resolution every command uses."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.display_text import clean_text
from core.estimate.estimate import QuantHint
from core.units import format_bytes_short
from tui.commands.shared.estimate_args import question_from_args
from tui.commands.shared.gguf_args import llama_cpp_options
from tui.render.gguf_fit_table import ctx_words as ctx_words
from tui.render.gguf_fit_table import options_words as options_words

if TYPE_CHECKING:
    from core.answer.device import Device
    from core.answer.question import Question
    from core.catalog.gguf_source import GgufSource
    from core.gguf_load.answer import GgufAnswer
    from core.gguf_load.fit import GgufAsk, GgufFitRow


@dataclass(frozen=True)
class GgufCliAnswer:
    """The answer, and what the command prints beside it."""

    answer: GgufAnswer | None
    """None when llama.cpp's plan cannot size the model (`problem` says why)."""
    problem: str | None
    notes: tuple[str, ...]
    device_json: dict[str, Any]
    device_lines: tuple[str, ...]
    problem_lines: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    """Flags and variables that fell back, and memory that was never read."""


def answer_for(args: argparse.Namespace, found: GgufSource) -> GgufCliAnswer:
    """llama.cpp's answer for the GGUF `found`, asked by `inspect`'s flags."""
    from core.errors import ModelError
    from core.gguf_load.answer import answer_gguf, ctx_size
    from core.load.llama_cpp import plan_for_model

    flags = llama_cpp_options(args)
    # The device alone is wanted: mlxcel's workload fields are not asked.
    device_args = argparse.Namespace(**vars(args))
    device_args.max_tokens = args.max_tokens or 1
    inputs = question_from_args(device_args, QuantHint.DEFAULT)
    device = inputs.question.device
    lines = _device_lines(device)
    # mlxcel's wording of memory never read speaks of its fallback: llama.cpp's below.
    warnings = tuple(w for w in inputs.warnings if w != device.available.unread_line)
    if device.available.unread is not None:
        warnings += (
            f"available memory was not read ({device.available.unread}): llama.cpp's load "
            "has no verdict, largest context or --n-gpu-layers; give --memory-limit SIZE",
        )
    try:
        plan = plan_for_model(found.model, flags.options)
    except ModelError as exc:
        # The reading stands (the weights are the tensors' bytes); the load is not sized.
        problem = str(exc)
        return GgufCliAnswer(
            None,
            problem,
            inputs.notes + flags.notes,
            device.json(),
            lines,
            (clean_text(f"vramscope: load (llama.cpp): none: {problem}"),),
            warnings,
        )
    ctx = ctx_size(args.max_tokens, plan, found.model.architecture)
    hub = not os.path.lexists(os.path.expanduser(args.model))
    projector = found.model.projector
    answer = answer_gguf(
        plan,
        ctx,
        device.available.bytes,
        device.available.unread,
        args.model if hub else found.model.first.path,
        hub=hub,
        projector=projector.path if projector is not None else None,
        arch=found.model.architecture,
    )
    notes = inputs.notes + flags.notes
    return GgufCliAnswer(answer, None, notes, device.json(), lines, (), warnings)


def _device_lines(device: Device) -> tuple[str, ...]:
    """Which device and which figure the load is held against (as `inspect` says it)."""
    if device.reading is None:
        return (f"vramscope: {device.line}",)
    chosen = device.available
    return (
        f"vramscope --memory-limit {device.memory.value}: "
        f"{format_bytes_short(chosen.bytes)} ({chosen.bytes} bytes): {chosen.source}",
        f"vramscope {device.reading.line}",
    )


@dataclass(frozen=True)
class GgufRows:
    """`fit`'s GGUF rows, ranked, the folders they came from, and what a flag meant."""

    rows: list[GgufFitRow]
    folders: frozenset[str]
    words: str
    notes: tuple[str, ...]


def gguf_ask(args: argparse.Namespace, question: Question) -> tuple[GgufAsk, tuple[str, ...]]:
    """The question every GGUF row answers, from the flags and the one device."""
    from core.gguf_load.fit import GgufAsk

    flags = llama_cpp_options(args)
    available = question.device.available
    ask = GgufAsk(flags.options, args.max_tokens, available.bytes, available.unread)
    return ask, flags.notes
