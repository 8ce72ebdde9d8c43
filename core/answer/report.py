"""vramscope's lines and JSON keys of an answer, printed beside mlxcel's banner and keys.

mlxcel's banner (`core.estimate.report.format_estimate`) and its JSON keys are
printed first and never changed; what follows is vramscope's and says so: which
device the answer is for, the largest context (capped at the trained one), a context
past the trained one, the model's parameter counts and the advice. `inspect`, `inspect
--tp/--pp` and `fit --json` take their figures from here, so they cannot differ.
"""

from __future__ import annotations

from typing import Any

from core.answer.answer import Answer, load_plan
from core.answer.context import past_trained_words
from core.answer.verdict import load_verdict_words
from core.display_text import clean_text
from core.load.mlx_lm import MlxLmPlan
from core.load.report import load_json, load_line, why_differs

PREFIX = "vramscope: "
ANSWER_KEYS = (
    "device",
    "largest_context",
    "past_trained_context",
    "trained_context_tokens",
    "params",
    "advice",
    "load",
    "load_unavailable",
)
"""vramscope's keys of an answer, in the order they follow mlxcel's."""


def answer_lines(answer: Answer) -> list[str]:
    """vramscope's lines under mlxcel's banner (one fact a line, each prefixed)."""
    device = answer.question.device
    scope = "every rank fits" if not answer.single_device else "fits"
    lines = [
        f"Backend: {device.words}; available {_available(answer)}",
        f"largest context that {scope}: {answer.context.words}",
    ]
    trained = answer.trained
    if answer.past_trained and trained is not None:
        lines.append(past_trained_words(answer.question.workload.max_tokens, trained))
    if answer.split_problem:
        lines.append(f"no split: {answer.split_problem}")
    if answer.params is not None:
        lines.append(f"model: {answer.params.words}, {answer.advice.stored_words}")
    if answer.single_device:
        lines += _load_lines(answer)
    if answer.advice.needed:
        lines += [f"advice: {line}" for line in answer.advice.lines]
    return [clean_text(PREFIX + line) for line in lines]


def _why(answer: Answer) -> str | None:
    """Why the load and mlxcel's total differ (more than 5%), None otherwise."""
    if answer.load is None:
        return None
    plan = load_plan(answer.model, answer.question)
    return why_differs(plan, answer.load, answer.estimate) if isinstance(plan, MlxLmPlan) else None


def _load_lines(answer: Answer) -> list[str]:
    """The load, its largest context, why it differs from mlxcel's, and its notes."""
    load = answer.load
    if load is None:
        return [f"load (mlx-lm): none: {answer.load_problem}"] if answer.load_problem else []
    lines = [load_line(load, load_verdict_words(answer.load_verdict))]
    if answer.load_context is not None:
        lines.append(f"largest context by the load: {answer.load_context.words}")
    why = _why(answer)
    if why:
        lines.append(why)
    lines += [f"load note: {note}" for note in load.notes]
    return lines


def _available(answer: Answer) -> str:
    split = answer.question.split
    if split.rank_available is not None:
        return "per rank " + ", ".join(f"{b:,}" for b in split.rank_available) + " bytes"
    av = answer.question.device.available
    return f"{av.bytes:,} bytes ({av.source})"


def answer_json(answer: Answer) -> dict[str, Any]:
    """vramscope's keys of an answer (after mlxcel's, never in place of one)."""
    trained = answer.trained
    out = {
        "device": answer.question.device.json(),
        "largest_context": answer.context.json(),
        "past_trained_context": answer.past_trained,
        "trained_context_tokens": trained.tokens if trained else None,
        "params": answer.params.json() if answer.params else None,
        "advice": list(answer.advice.lines),
        "load": None,
        "load_unavailable": answer.load_problem,
    }
    load = answer.load
    if load is not None:
        context = answer.load_context.json() if answer.load_context is not None else None
        out["load"] = load_json(
            load, answer.load_fits, context, _why(answer), answer.mlxcel_refuses_load
        )
    assert tuple(out) == ANSWER_KEYS
    return out
