"""`vramscope measure MODEL`: launch a real load, show its peak beside the estimate.

The load runs in a child process (hip_backend); this module imports neither torch
nor Textual. A split load (`--tp N` / `--pp N`) is the same run, of N ranks.
Exit status: 0 with a measured peak, 2 when the measurement failed (the reason on
one line) and for usage errors, 1 for `--check` when the estimate does not cover.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from core.display_text import clean_text, json_safe
from core.errors import UsageError
from core.measurement.engine import DEFAULT_ENGINE, MEASURING_ENGINE_NAMES, Engine
from core.measurement.request import DEFAULT_PROMPT_TOKENS, MAX_MEASURED_TOKENS
from core.measurement.run import MeasuredRun
from tui.commands._parallel import parallel_plan
from tui.commands.registry import help_line
from tui.commands.shared.flags import add_parallel_flags, add_run_flags, token_count
from tui.commands.shared.measure_args import request_from_args
from tui.commands.shared.output import EXIT_ERROR, EXIT_FAILED, failure_line, warn
from tui.commands.shared.run_progress import phase_view
from tui.commands.shared.signals import sigterm_as_interrupt

if TYPE_CHECKING:
    from hip_backend import PreparedMeasurement, PreparedParallel


def register(sub: Any) -> None:
    """Add the `measure` parser."""
    p = sub.add_parser(
        "measure",
        help=help_line("measure"),
        description="Run mlxcel's bench workload (a warm-up pass, then P prompt tokens "
        "and G greedy decode tokens) in a child process on a ROCm or CUDA GPU or the "
        "CPU, and print the measured peak beside the estimate at context P + G. "
        "--engine mlx loads the model with mlx-lm and reports MLX's own peak "
        "(mx.get_peak_memory); the torch engine emulates MLX-ROCm's in-flight queue. "
        "Progress goes to stderr: a live display of load, prefill and decode (tokens "
        "done of total, tokens/s) on a terminal, one line per phase as it starts and "
        "ends otherwise; --quiet turns it off. stdout is only the result.",
    )
    p.add_argument(
        "model",
        metavar="MODEL",
        help="a model folder or a built-in profile name (no weights: synthetic weights)",
    )
    p.add_argument(
        "--prompt-tokens",
        type=token_count("--prompt-tokens", 1, MAX_MEASURED_TOKENS),
        default=DEFAULT_PROMPT_TOKENS,
        metavar="P",
        help=f"synthetic prompt tokens of the measured pass (default {DEFAULT_PROMPT_TOKENS})",
    )
    p.add_argument(
        "--inflight-mb",
        metavar="RAW",
        default=None,
        help="in-flight budget in MiB, parsed like MLX_ROCM_MAX_INFLIGHT_MB "
        "(which it overrides); 0 = bound off; default 1024",
    )
    p.add_argument(
        "--engine",
        choices=MEASURING_ENGINE_NAMES,
        default=DEFAULT_ENGINE.value,
        help="torch: vramscope's decoder emulating MLX-ROCm (pip install 'vramscope[measure]'); "
        "mlx: real MLX through mlx-lm (pip install 'vramscope[mlx]') (default torch)",
    )
    p.add_argument(
        "--kv-cache-mode",
        choices=("fp16", "int8"),
        default="fp16",
        help="KV cache element type: int8 is mlx-lm's 8-bit quantized cache, measured by "
        "--engine mlx only (default fp16)",
    )
    add_run_flags(p)
    add_parallel_flags(p, measure=True)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the estimate does not cover the measured peak (every rank, with "
        "--tp/--pp) or the run failed, 0 when it covers; the output is unchanged",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Measure one model and print the comparison (SIGTERM stops it as Ctrl-C does)."""
    with sigterm_as_interrupt():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from hip_backend import measure, missing_engine, prepare, prepare_parallel, read_hostfile
    from tui.commands.shared.run_report import run_json, run_lines

    missing = missing_engine(Engine.named(args.engine, "--engine"))
    if missing is not None:  # one line naming the extra, before any child starts
        print(failure_line(missing), file=sys.stderr)
        return EXIT_ERROR
    plan = parallel_plan(args)
    if plan is None and args.hostfile is not None:
        raise UsageError("--hostfile", "places the ranks of --tp N or --pp N; give one of them")
    if plan is not None and not Engine.named(args.engine, "--engine").spec.ranks:
        raise UsageError(f"--{plan.kind.value}", "measures ranks with --engine mlx only")
    request = request_from_args(args, args.model, args.prompt_tokens)
    # A model that does not resolve, or a plan inspect would refuse, is a usage error.
    if plan is None:
        prepared: PreparedMeasurement | PreparedParallel = prepare(request)
    else:
        hostfile = read_hostfile(args.hostfile, plan.ranks) if args.hostfile else None
        prepared = prepare_parallel(request, plan, hostfile=hostfile)
    if args.quiet:  # the run hands them over as notices, which --quiet drops
        warn(prepared.warnings)
    progress = phase_view(request.engine, quiet=args.quiet)
    progress.begin()
    try:
        outcome = measure(prepared, progress, record_history=not args.no_history)
    finally:  # also on Ctrl-C: the live display gives the terminal back
        progress.close()
    if args.json:
        document = json_safe(run_json(prepared, outcome))
        print(json.dumps(document, indent=2, ensure_ascii=False))
    elif isinstance(outcome, MeasuredRun):
        print("\n".join(clean_text(line) for line in run_lines(prepared, outcome)))
    if not isinstance(outcome, MeasuredRun):
        print(failure_line(outcome), file=sys.stderr)
        return EXIT_ERROR
    if args.check and not outcome.covered:
        return EXIT_FAILED  # --check: the estimate does not cover the peak (of every rank)
    return 0
