"""`--tp N` / `--pp N` for inspect and measure: one estimate (or one measured peak) per
rank, and the plan's verdict."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from core import __version__
from core.display_text import clean_text, json_safe
from core.errors import ShardingError
from core.estimate.estimate import QuantHint
from core.measurement.engine import Engine
from core.measurement.fields import RankFields
from core.measurement.result import MeasuredPeak, MeasurementFailure
from core.parallel.plan import ParallelPlan, parse_rank_limits
from core.parallel.sharding import ParallelKind
from tui.commands.shared.estimate_args import question_from_args
from tui.commands.shared.measure_args import request_from_args
from tui.commands.shared.output import EXIT_FAILED, ProgressLine, failure_line, note, warn

if TYPE_CHECKING:
    from hip_backend import ParallelRun, PreparedParallel


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
    if plan.ranks == 1:
        model = resolve_model(args.model, args.models_dir)
        tensors = None
    else:
        model, tensors = resolve_parallel_model(args.model, args.models_dir)
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
    return EXIT_FAILED if getattr(args, "check", False) and not pe.fits else 0


def measure_parallel(args: argparse.Namespace, plan: ParallelPlan) -> int:
    """`vramscope measure MODEL --engine mlx --tp N | --pp N`: one row per rank."""
    import json

    from hip_backend import ParallelRun, prepare_parallel, read_hostfile, record_peaks, run_parallel

    hostfile = read_hostfile(args.hostfile, plan.ranks) if args.hostfile is not None else None
    request = request_from_args(args, args.model, args.prompt_tokens)
    prepared = prepare_parallel(request, plan, hostfile=hostfile)  # refusals: exit 2
    warn(prepared.warnings)
    progress = ProgressLine(enabled=False if args.json or args.quiet else None)
    outcome = run_parallel(prepared, progress)
    progress.clear()
    if isinstance(outcome, ParallelRun) and not args.no_history:
        record_peaks(outcome.ranks)
    if args.json:
        doc = json_safe(parallel_measure_json(prepared, outcome))
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    elif isinstance(outcome, ParallelRun):
        print("\n".join(clean_text(line) for line in parallel_measure_lines(prepared, outcome)))
    if not isinstance(outcome, ParallelRun):
        print(failure_line(outcome), file=sys.stderr)
        return EXIT_FAILED
    if getattr(args, "check", False) and not all(
        p.margin is not None and p.margin.covered for p in outcome.ranks
    ):
        return EXIT_FAILED  # --check: some rank's estimate does not cover its peak
    return 0


def launcher_text(prepared: PreparedParallel) -> str:
    """How the ranks were placed: the loopback, or the hostfile's hosts."""
    hf = prepared.hostfile
    if hf is None:
        return f"mlx.launch --backend ring -n {prepared.plan.ranks} on the loopback"
    hosts = ", ".join(dict.fromkeys(h.ssh for h in hf.hosts))
    return f"mlx.launch --backend ring --hostfile {hf.path} (hosts: {hosts})"


def parallel_measure_lines(prepared: PreparedParallel, run: ParallelRun) -> list[str]:
    """The plan, then one table row per rank: estimate peak against measured peak."""
    first = run.ranks[0]
    req = prepared.request
    lines = [
        f"Model:     {req.model}  ({prepared.estimate.family}, {prepared.plan.kind.label}, "
        f"{prepared.plan.ranks} ranks)"
        + ("  [synthetic weights]" if first.synthetic_weights else ""),
        f"Launch:    {launcher_text(prepared)}; {first.device_name}, {first.runtime_version}",
        f"Workload:  pp{req.prompt_tokens} / tg{req.gen_tokens} after a warm-up pass "
        f"({req.warmup_tokens} tokens); estimate for {prepared.backend.label} at "
        f"{req.context_tokens} tokens",
        "Peak:      mx.get_peak_memory() of each rank (load + workload); estimate = the rank's "
        "max(load peak, running total)",
        "",
        "| Rank | Holds | Estimate (bytes) | Measured peak (bytes) | Margin (bytes) | Covered "
        "| Weights held (bytes) |",
        "|---:|---|---:|---:|---:|---|---:|",
    ]
    for peak, rank in zip(run.ranks, prepared.estimate.ranks, strict=True):
        m = peak.margin
        holds = (
            f"layers {rank.layers[0]}-{rank.layers[1] - 1}"
            if rank.layers is not None
            else f"1/{prepared.plan.ranks}, {rank.kv_heads} KV heads"
        )
        lines.append(
            f"| {rank.rank} | {holds} | {peak.estimate_bytes or 0:,} | {peak.peak_bytes:,} | "
            f"{(m.bytes if m else 0):+,} | {'yes' if m and m.covered else 'NO'} | "
            f"{peak.weights_bytes or 0:,} |"
        )
    lines += [
        "",
        f"Single device estimate: {prepared.estimate.single.total_bytes:,} bytes; "
        f"wall time of the {prepared.plan.ranks}-rank run: {run.wall_seconds:.2f} s",
    ]
    return lines


def parallel_measure_json(
    prepared: PreparedParallel, outcome: ParallelRun | MeasurementFailure
) -> dict[str, Any]:
    """The `--json` document: the plan, then one entry per rank (or the failure)."""
    doc: dict[str, Any] = {
        "parallel": {"kind": prepared.plan.kind.value, "ranks": prepared.plan.ranks},
        "engine": Engine.MLX,
        "launcher": launcher_text(prepared),
        "estimate_backend": prepared.backend.value,
        "single_device_estimate_bytes": prepared.estimate.single.total_bytes,
        "estimate_bytes": [r.peak_bytes for r in prepared.estimate.ranks],
    }
    if isinstance(outcome, MeasurementFailure):
        doc["error"] = outcome.to_dict()
        return doc
    doc["wall_seconds"] = round(outcome.wall_seconds, 3)
    ranks = []
    for peak in outcome.ranks:
        m = peak.margin
        ranks.append(
            {
                "rank": _rank(peak),
                "estimate_bytes": peak.estimate_bytes,
                "measured": peak.to_dict(),
                "margin": None
                if m is None
                else {"bytes": m.bytes, "percent": round(m.percent, 3), "covered": m.covered},
            }
        )
    doc["ranks"] = ranks
    return doc


def _rank(peak: MeasuredPeak) -> int | None:
    fields = peak.fields
    return fields.rank if isinstance(fields, RankFields) else None
