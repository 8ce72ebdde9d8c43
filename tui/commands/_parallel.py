"""`--tp N` / `--pp N`: the plan the flags ask for, and `inspect`'s answer for it (one
estimate per rank and the plan's verdict; `measure` runs it as one run)."""

from __future__ import annotations

import argparse

from core import __version__
from core.display_text import clean_text
from core.errors import ShardingError
from core.estimate.estimate import QuantHint
from core.parallel.plan import ParallelPlan, parse_rank_limits
from core.parallel.sharding import ParallelKind
from tui.commands.shared.estimate_args import question_from_args
from tui.commands.shared.flags import hub_options
from tui.commands.shared.output import EXIT_ERROR, EXIT_FAILED, note, warn


def parallel_plan(args: argparse.Namespace) -> ParallelPlan | None:
    """The plan the flags ask for, or None for a single device."""
    if getattr(args, "tp", None) is not None:
        return ParallelPlan(ParallelKind.TENSOR, args.tp)
    if getattr(args, "pp", None) is not None:
        return ParallelPlan(ParallelKind.PIPELINE, args.pp)
    return None


def run_parallel(args: argparse.Namespace, quant: QuantHint) -> int:
    """`vramscope inspect MODEL --tp N | --pp N`: the split's answer (one rank: the single
    device, in the plan's form)."""
    from core.answer.answer import Answer, answer
    from core.answer.question import ModelFacts, Split
    from core.answer.report import answer_json, answer_lines
    from core.catalog.resolve import resolve_model
    from core.catalog.split_source import resolve_parallel_model
    from core.estimate.report import to_json_pretty
    from core.parallel.report import format_parallel, parallel_report

    plan = parallel_plan(args)
    assert plan is not None
    text = args.memory_limit
    # A list gives each rank its own memory; one size (or a preset, free, total) is the
    # device's, and every rank has it.
    limits = parse_rank_limits(text, plan.ranks) if text is not None and "," in text else None
    split = Split(plan.kind, plan.ranks, tuple(limits) if limits else None)
    inputs = question_from_args(args, quant, split=split)
    note(inputs.notes)
    hub = hub_options(args)  # a Hub repo is split from the headers inspect reads
    if plan.ranks == 1:
        model = resolve_model(args.model, args.models_dir, hub=hub)
        tensors = None
    else:
        model, tensors = resolve_parallel_model(args.model, args.models_dir, hub=hub)
    warn(inputs.warnings + model.warnings)
    found = answer(ModelFacts(model, args.model, tensors=tensors), inputs.question)
    assert isinstance(found, Answer)  # a split is of the stored model
    if found.split_problem is not None or found.plan is None:
        raise ShardingError(found.split_problem or "the split cannot be made")
    pe = found.plan
    warn(tuple(dict.fromkeys(w for r in pe.ranks for w in r.estimate.warnings)))
    if args.json:
        print(to_json_pretty(parallel_report(model, pe, __version__) | answer_json(found)))
    else:
        text = format_parallel(args.model, pe)  # family and names come from the folder
        print("".join(clean_text(line) + "\n" for line in text.splitlines()), end="")
        print("\n".join(answer_lines(found)))
    check = getattr(args, "check", False)
    if check and split.rank_available is None and found.question.device.available.unread:
        return EXIT_ERROR  # no verdict from memory that was never read
    return EXIT_FAILED if check and not pe.fits else 0
