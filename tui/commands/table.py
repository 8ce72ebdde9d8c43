"""`vramscope table MODEL...`: the sweep behind mlxcel's "Estimate against peak" table.

For every model, context C and in-flight budget B it measures the bench workload
with P = C - G prompt tokens and G decode tokens, and writes a Markdown table of
measured peak, estimate at C, margin and whether the estimate covers the peak.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.display_text import clean_text, escape_undecodable
from core.errors import UsageError
from core.measurement.comparison import expected_backend
from core.measurement.engine import DEFAULT_ENGINE, MEASURING_ENGINE_NAMES, Engine
from core.measurement.result import MeasuredPeak, MeasurementFailure
from core.measurement.run import MeasuredRun
from tui.commands.registry import help_line
from tui.commands.shared.flags import add_run_flags
from tui.commands.shared.measure_args import request_from_args
from tui.commands.shared.output import (
    EXIT_ERROR,
    check_out_path,
    failure_line,
    warn,
    write_out,
)
from tui.commands.shared.run_progress import phase_view
from tui.commands.shared.signals import sigterm_as_interrupt

if TYPE_CHECKING:
    from core.measurement.report import TableRow

DEFAULT_CONTEXTS = "640,4096"
DEFAULT_BUDGETS = "256,1024,4096"


def register(sub: Any) -> None:
    """Add the `table` parser."""
    p = sub.add_parser(
        "table",
        help=help_line("table"),
        description="Measure each MODEL at each context and in-flight budget (prompt "
        "tokens = context - gen tokens) and print an 'Estimate against peak' table in "
        "Markdown, as on mlxcel's results page. Before each run a [k/n] line, then its "
        "phases (as measure shows them) on stderr; --quiet turns both off.",
    )
    p.add_argument("models", nargs="+", metavar="MODEL", help="model folders or profile names")
    p.add_argument(
        "--contexts",
        default=DEFAULT_CONTEXTS,
        metavar="LIST",
        help=f"comma-separated contexts in tokens (default {DEFAULT_CONTEXTS})",
    )
    p.add_argument(
        "--budgets",
        default=DEFAULT_BUDGETS,
        metavar="LIST",
        help=f"comma-separated in-flight budgets in MiB, 0 = bound off (default {DEFAULT_BUDGETS})",
    )
    p.add_argument(
        "--engine",
        default=DEFAULT_ENGINE.value,
        metavar="LIST",
        help="comma-separated engines: torch, mlx or mlx,torch (both, their peaks side by "
        f"side) (default {DEFAULT_ENGINE})",
    )
    p.add_argument(
        "--history",
        action="store_true",
        help="measure nothing: the table of the runs of each MODEL (as recorded: the name or "
        "folder the run was given) from the measurement history, every engine's, `vramscope "
        "run`'s (engine external) included, each peak named for what it counts",
    )
    add_run_flags(p)
    p.add_argument("--out", type=Path, default=None, metavar="FILE.md", help="also write here")
    p.set_defaults(func=run)


_EXAMPLES = {"--contexts": "640,4096", "--budgets": "256,1024,4096"}


def parse_int_list(flag: str, text: str, minimum: int) -> list[int]:
    """`640,4096` -> [640, 4096]; a usage error names the bad item."""
    values = []
    for item in text.split(","):
        item = item.strip()
        if not item.isascii() or not item.isdigit():
            raise UsageError(flag, f"'{item}' is not a whole number (give e.g. {_EXAMPLES[flag]})")
        value = int(item)
        if value < minimum:
            raise UsageError(flag, f"{value} is below the minimum of {minimum}")
        values.append(value)
    return values


def parse_engines(text: str) -> list[Engine]:
    """`mlx,torch` -> [Engine.MLX, Engine.TORCH] (each once, in the order given)."""
    engines: list[Engine] = []
    for item in text.split(","):
        name = item.strip().lower()
        if name not in MEASURING_ENGINE_NAMES:
            raise UsageError(
                "--engine",
                f"'{item.strip()}' is not an engine (give {', '.join(MEASURING_ENGINE_NAMES)})",
            )
        engine = Engine.named(name, "--engine")
        if engine not in engines:
            engines.append(engine)
    return engines


def run(args: argparse.Namespace) -> int:
    """Measure every combination, then print (and write) the table (SIGTERM stops it
    as Ctrl-C does)."""
    with sigterm_as_interrupt():
        return _run(args)


def _write(text: str, out: Path | None) -> None:
    """Print the table, and write it to `--out`."""
    print(escape_undecodable(text), end="")
    if out is not None:
        write_out("--out", out, text.encode("utf-8"))


def _recorded_as(name: str) -> str:
    """A model as a run records it: a folder by its absolute path, else the name."""
    path = Path(name)
    return str(path.resolve()) if path.is_dir() else name


def _history_table(args: argparse.Namespace) -> int:
    """`--history`: the recorded runs of the models, as a table; 2 when there are none."""
    from core.measurement.history import HistoryStore
    from core.measurement.report import TableRow, markdown_table

    store = HistoryStore.default()
    read = store.read()
    warn(read.warnings)
    wanted = {_recorded_as(m) for m in args.models} | set(args.models)
    rows = [
        TableRow(p.model, p.context_tokens, p.inflight_mib, p.estimate_bytes, p, p.engine)
        for p in read.results
        if p.model in wanted or _recorded_as(p.model) in wanted
    ]
    # Runs recorded as "not measured" (no peak): listed, never covered.
    rows += [
        TableRow(u.model, u.context_tokens, u.inflight_mib, u.estimate_bytes, u.failure, u.engine)
        for u in read.unmeasured
        if u.model in wanted or _recorded_as(u.model) in wanted
    ]
    if not rows:
        raise UsageError(
            "--history", f"no recorded run of {', '.join(args.models)} in {store.path}"
        )
    lines = [f"From the measurement history ({store.path})."]
    lines += engine_lines(rows, list(dict.fromkeys(r.engine for r in rows)))
    _write(markdown_table(rows, "Estimate against peak", lines, formulas=True), args.out)
    return 0


def _run(args: argparse.Namespace) -> int:
    from core.measurement.report import TableRow, markdown_table
    from hip_backend import measure, missing_engine, prepare

    if args.out is not None:  # said before any run starts
        check_out_path("--out", args.out)
    if args.history:
        return _history_table(args)
    contexts = parse_int_list("--contexts", args.contexts, 1)
    budgets = parse_int_list("--budgets", args.budgets, 0)
    engines = parse_engines(args.engine)
    for engine in engines:
        missing = missing_engine(engine)
        if missing is not None:  # one line naming the extra, before any run
            print(failure_line(missing), file=sys.stderr)
            return EXIT_ERROR
    for context in contexts:
        if context <= args.gen_tokens:
            raise UsageError(
                "--contexts",
                f"{context} leaves no prompt tokens with --gen-tokens {args.gen_tokens}",
            )
    plans = []
    for model in args.models:  # resolve everything first: a bad name stops before any run
        for context in contexts:
            for engine in engines:
                base = request_from_args(args, model, context - args.gen_tokens, engine)
                # MLX has an in-flight queue only on ROCm: elsewhere one run per context.
                has_queue = (
                    engine.spec.emulates_rocm_queue
                    or expected_backend(engine, base.device).has_inflight_reserve
                )
                for budget in budgets if has_queue else budgets[:1]:
                    request = replace(base, inflight=budget)
                    plans.append((model, context, budget, engine, has_queue, prepare(request)))
    rows: list[TableRow] = []
    for index, (model, context, budget, engine, has_queue, prepared) in enumerate(plans, 1):
        where = f", {budget} MiB" if has_queue else ""
        if not args.quiet:
            print(
                clean_text(
                    f"vramscope: [{index}/{len(plans)}] {model} at {context} tokens{where}, "
                    f"{engine}"
                ),
                file=sys.stderr,
            )
        else:  # the launcher hands them over as notices, which --quiet drops
            warn(prepared.warnings)
        progress = phase_view(engine, quiet=args.quiet)
        progress.begin()
        try:
            ran = measure(prepared, progress, record_history=not args.no_history)
        finally:  # also on Ctrl-C: the live display gives the terminal back
            progress.close()
        outcome = ran.peak if isinstance(ran, MeasuredRun) else ran
        if isinstance(outcome, MeasurementFailure):
            print(failure_line(outcome), file=sys.stderr)
        held_against = (
            outcome.estimate_bytes
            if isinstance(outcome, MeasuredPeak) and outcome.estimate_bytes is not None
            else prepared.estimate.total_bytes
        )
        rows.append(TableRow(model, context, budget, held_against, outcome, engine))
    _write(markdown_table(rows, "Estimate against peak", preamble(rows, args)), args.out)
    return 0 if all(isinstance(r.outcome, MeasuredPeak) for r in rows) else EXIT_ERROR


def preamble(rows: list[TableRow], args: argparse.Namespace) -> list[str]:
    """Where and how the table was measured, and what each engine's peak counts."""
    date = datetime.date.today().isoformat()
    engines = list(dict.fromkeys(r.engine for r in rows)) or [DEFAULT_ENGINE]
    names = " and ".join(e.label for e in engines)
    lines = [f"Measured {date} with {names}.", *engine_lines(rows, engines)]
    estimate = formula_words(rows, engines)
    lines.append(
        f"Workload: warm-up (prefill + {args.warmup_tokens} tokens), then P = context - "
        f"{args.gen_tokens} prompt tokens and {args.gen_tokens} greedy decode tokens. "
        f"Estimate: {estimate}."
    )
    return lines


def engine_lines(rows: list[TableRow], engines: list[Engine]) -> list[str]:
    """Each engine's device and what its peak counts (from its first measured row)."""
    from core.measurement.report import device_line

    lines = []
    for engine in engines:
        first = next(
            (r.outcome for r in rows if r.engine is engine and isinstance(r.outcome, MeasuredPeak)),
            None,
        )
        if first is None:
            continue
        label = engine.label
        lines.append(f"{label}: {device_line(first)}; peak: {first.counted}.")
        if first.peak_kind != first.counted:
            lines.append(f"{label} peak, exactly: {first.peak_kind}.")
        if first.synthetic_weights:
            lines.append(
                f"{label} weights: synthetic (random values of the real shapes and dtypes)."
            )
    return lines


def formula_words(rows: list[TableRow], engines: list[Engine]) -> str:
    """The formula each engine's peaks were held against, from the rows themselves (the
    one rule, `core.measurement.comparison.held_against`, that `calibrate` fits against):
    "mlxcel's ROCm formula at the context with the row's budget"."""
    parts = []
    for engine in engines:
        formulas = list(
            dict.fromkeys(
                r.outcome.estimate_backend
                for r in rows
                if r.engine is engine and isinstance(r.outcome, MeasuredPeak)
            )
        )
        if not formulas:
            continue
        names = " or ".join(b.label for b in formulas)
        words = f"mlxcel's {names} formula at the context"
        if any(b.has_inflight_reserve for b in formulas):
            words += " with the row's budget"
        else:
            words += " (no in-flight term)"
        parts.append((engine, words))
    if not parts:  # every run failed: the estimate each would have been held against
        return "mlxcel's formula each run would have been held against, at the context"
    if len(parts) == 1:
        return parts[0][1]
    return "; ".join(f"{e.label}: {w}" for e, w in parts)
