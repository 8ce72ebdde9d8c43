"""`--tp N` / `--pp N` for inspect: one estimate per rank and the plan's verdict."""

from __future__ import annotations

import argparse

from core import __version__
from core.backend import resolve_backend
from core.environment import read_env, resolve_settings
from core.estimate import QuantHint, Workload
from core.parallel import MAX_RANKS, ParallelPlan, estimate_parallel, parse_rank_limits
from core.parallel_report import format_parallel, parallel_report
from core.parallel_source import resolve_parallel_model
from core.report import to_json_pretty
from core.sharding import ParallelKind
from tui.commands.common import int_at_least, warn


def add_parallel_flags(p: argparse.ArgumentParser) -> None:
    """`--tp N | --pp N` (2 to 8 ranks)."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--tp",
        type=int_at_least("--tp", 2),
        default=None,
        metavar="N",
        help=f"tensor parallel over N ranks (2-{MAX_RANKS}), as mlx-lm's Model.shard(); "
        "--memory-limit then takes one size or one per rank (SIZE,SIZE,...)",
    )
    group.add_argument(
        "--pp",
        type=int_at_least("--pp", 2),
        default=None,
        metavar="N",
        help=f"pipeline parallel over N ranks (2-{MAX_RANKS}), as mlx-lm's model.pipeline()",
    )


def parallel_plan(args: argparse.Namespace) -> ParallelPlan | None:
    """The plan the flags ask for, or None for a single device."""
    if getattr(args, "tp", None) is not None:
        return ParallelPlan(ParallelKind.TENSOR, args.tp)
    if getattr(args, "pp", None) is not None:
        return ParallelPlan(ParallelKind.PIPELINE, args.pp)
    return None


def run_parallel(args: argparse.Namespace, quant: QuantHint) -> int:
    """`vramscope inspect MODEL --tp N | --pp N`."""
    plan = parallel_plan(args)
    assert plan is not None
    limits = parse_rank_limits(args.memory_limit, plan.ranks)
    choice = resolve_backend(args.backend)
    resolved = resolve_settings(choice.backend, read_env(), inflight_flag=args.inflight_mb)
    model, tensors = resolve_parallel_model(args.model, args.models_dir)
    warn(resolved.warnings + model.warnings)
    workload = Workload(
        max_tokens=args.max_tokens,
        batch=args.batch,
        kv_int8=args.kv_cache_mode == "int8",
        quant=quant,
    )
    pe = estimate_parallel(model, tensors, plan, workload, resolved.settings, limits)
    if args.json:
        print(to_json_pretty(parallel_report(model, pe, __version__)))
    else:
        print(format_parallel(args.model, pe), end="")
    return 0
