"""`vramscope run [--model MODEL] [flags] -- CMD ARGS...`: your engine's real peak.

Starts CMD in its own process group, in the foreground of the terminal when vramscope
has it (dying with vramscope), follows every process it starts (setsid and double forks
included) and samples their memory until it ends (hip_backend/external, one run as
`hip_backend.start_command` makes it), kills what it left behind, and prints the peak
beside the estimate for MODEL at the settings given, with the margin and the command's
exit status, on stderr (`--json`: on stdout once it has ended): stdout and stdin stay
the command's. MODEL and the context come from the flags given, else from the command's
own flags (mlx-lm, mlxcel, llama.cpp: `core.measurement.command_flags`); what cannot be
read is said in one line. The run goes to the history as engine `external`, with its
exit status; a command that ended before the first sample with nothing of its own read
is "not measured" (no record). Exit status: the command's, 2 for vramscope's own
errors, 130/143 when Ctrl-C or SIGTERM to vramscope stopped it (every process of the
command is killed first).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from core.display_text import json_safe
from core.errors import VramscopeError
from core.estimate.estimate import DEFAULT_CTX_LEN, KvCacheMode
from tui.commands.registry import help_line
from tui.commands.shared.flags import add_estimate_flags, add_preset_flag
from tui.commands.shared.output import EXIT_ERROR, note, warn
from tui.commands.shared.signals import exit_status, sigterm_as_interrupt

if TYPE_CHECKING:
    from core.backend import Backend
    from core.measurement.run import RunOutcome

DEFAULT_INTERVAL_S = 0.25
MIN_INTERVAL_S = 0.01


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text[:40]}' is not a number of seconds") from None
    if not MIN_INTERVAL_S <= value <= 60:
        raise argparse.ArgumentTypeError(f"give {MIN_INTERVAL_S} to 60 seconds, not {value:g}")
    return value


def register(sub: Any) -> None:
    """Add the `run` parser."""
    p = sub.add_parser(
        "run",
        help=help_line("run"),
        description="Run CMD in its own process group and sample the memory of its "
        "processes until it exits: amdgpu VRAM + GTT from /proc/PID/fdinfo, NVML's "
        "per-process figure on NVIDIA, else host RSS (VmHWM). Prints the peak beside the "
        "estimate for MODEL (or the model the command's flags name) on stderr, records "
        "the run in the history as engine 'external' and exits with CMD's status.",
        usage="vramscope run [--model MODEL] [options] -- CMD [ARGS...]",
    )
    p.add_argument(
        "--model",
        "-m",
        default=None,
        metavar="MODEL",
        help="the model the estimate is for (default: the one the command's flags name)",
    )
    add_estimate_flags(p)
    add_preset_flag(p)
    p.set_defaults(max_tokens=None)  # not given: the command's own context
    p.add_argument(
        "--interval",
        type=_interval,
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"seconds between samples (default {DEFAULT_INTERVAL_S})",
    )
    p.add_argument(
        "--no-history",
        action="store_true",
        help="do not append the run to the history file ($XDG_STATE_HOME/vramscope)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the run as JSON on stdout once the command has ended (the peak, the "
        "estimate, the margin, the exit status; or why nothing was measured)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the command, print its peak beside the estimate, pass its status through."""
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    with sigterm_as_interrupt():
        try:
            return _run(args, command)
        except KeyboardInterrupt as interrupt:  # the command's group is gone already
            return exit_status(interrupt)


def _estimate_for(
    args: argparse.Namespace, model: str | None, context: int, kv_int8: bool, *, llama: bool
) -> tuple[Callable[[Backend], int | None], int]:
    """The estimate on a device kind (the held-against answer, or None without a
    model) and the in-flight budget of the settings given; warnings on stderr."""
    from core.answer.held_against import held_against_answer
    from core.catalog.resolve import resolve_model
    from tui.commands.shared.estimate_args import parse_quant_flag, question_from_args

    args.max_tokens = context
    inputs = question_from_args(args, parse_quant_flag(args.quant))
    warn(inputs.warnings)
    settings = inputs.question.settings
    if model is None and llama:
        note(["a llama.cpp command: its buffers are held against vramscope's llama.cpp load"])
        return (lambda _backend: None), settings.inflight_mib
    if model is None:
        note(["no estimate: give --model, or a command whose flags name its model"])
        return (lambda _backend: None), settings.inflight_mib
    try:
        snapshot = resolve_model(model, args.models_dir)
    except VramscopeError as exc:
        warn([f"no estimate for '{model}': {exc}"])
        return (lambda _backend: None), settings.inflight_mib

    def estimate(backend: Backend) -> int | None:
        found = held_against_answer(
            snapshot, settings, backend, context_tokens=context, kv_int8=kv_int8
        )
        return found.estimate.total_bytes

    return estimate, settings.inflight_mib


def _run(args: argparse.Namespace, command: list[str]) -> int:
    from core.measurement.command_flags import read_command
    from core.measurement.protocol import MeasureNotice
    from core.measurement.report import comparison_lines
    from core.measurement.result import FailureKind, MeasuredPeak
    from core.measurement.run import MeasuredRun, RunEvent
    from hip_backend import CommandRun, check_command, external_peak, start_command
    from tui.commands.shared.llama_run import LlamaBeside, is_llama_command, llama_beside

    check_command(command)
    facts = read_command(command)
    # A llama.cpp command's GGUF has no mlxcel estimate: vramscope's llama.cpp load is
    # held against llama.cpp's own buffers instead (`llama_beside`), unless --model asks.
    llama_cmd = is_llama_command(command) and args.model is None
    if facts.unread_line is not None and not llama_cmd:
        note([facts.unread_line])
    model = args.model or facts.model
    estimated = None if llama_cmd else model
    context = args.max_tokens if args.max_tokens is not None else facts.context_tokens
    if context is None:
        if estimated is not None:  # without a model there is no estimate to say it of
            note([f"no context given or read: the estimate is at {DEFAULT_CTX_LEN} tokens"])
        context = DEFAULT_CTX_LEN
    kv_int8 = KvCacheMode.named(args.kv_cache_mode, "--kv-cache-mode").int8 or facts.kv_int8
    estimate_for, inflight_mib = _estimate_for(args, estimated, context, kv_int8, llama=llama_cmd)

    besides: list[LlamaBeside | None] = []

    def finish(done: CommandRun) -> MeasuredPeak:
        peak = external_peak(
            done,
            command,
            model=model or command[0],
            family=facts.family,
            context_tokens=context,
            kv_int8=kv_int8,
            inflight_mib=inflight_mib,
            estimate_for=estimate_for,
        )
        # llama.cpp's own buffer lines beside vramscope's load, recorded with the run (#40).
        try:
            beside = llama_beside(command, peak, done.stderr_text)
        except Exception as exc:  # never a lost run: the peak is recorded without them
            why = f"llama.cpp's buffer lines not read: {type(exc).__name__}: {exc}"
            beside = LlamaBeside(warnings=[why])
        besides.append(beside)
        if beside is not None and beside.buffers is not None:
            peak = replace(peak, extra=beside.record_into(dict(peak.extra)))
        return peak

    def said(event: RunEvent) -> None:
        if isinstance(event, MeasureNotice):
            warn([event.message])

    handle = start_command(
        command,
        finish,
        said,
        interval_s=args.interval,
        record_history=not args.no_history,
        keep_stderr=is_llama_command(command),  # its buffer lines, tee'd (#40)
    )
    try:
        while (outcome := handle.wait(0.2)) is None:
            pass
    except KeyboardInterrupt:
        handle.cancel()  # every process of the command, then the run ends cancelled
        handle.wait()
        raise
    llama = besides[0] if besides else None
    if llama is not None:
        note(llama.notes)
        warn(llama.warnings)
    if args.json:
        document = command_json(outcome)
        if llama is not None:
            document["llama_cpp"] = llama.json
        print(json.dumps(json_safe(document), indent=2, ensure_ascii=False))
    if isinstance(outcome, MeasuredRun):
        if not args.json:
            for line in comparison_lines(outcome.peak):
                print(f"vramscope: {line}", file=sys.stderr)
            for line in llama.lines if llama is not None else []:
                print(f"vramscope: {line}", file=sys.stderr)
        return outcome.peak.exit_status or 0
    if outcome.kind is FailureKind.CANNOT_START or outcome.exit_status is None:
        print(f"vramscope: error: {outcome.message}", file=sys.stderr)
        return EXIT_ERROR
    if not args.json:
        print(f"vramscope: Measured peak:  {outcome.message}", file=sys.stderr)
    return outcome.exit_status


def command_json(outcome: RunOutcome) -> dict[str, Any]:
    """`run --json`: the peak, the estimate it is held against and the margin, with the
    command's exit status (a failed run is never covered); or the failure."""
    from core.measurement.engine import Engine
    from core.measurement.report import peak_json
    from core.measurement.run import MeasuredRun

    if not isinstance(outcome, MeasuredRun):
        return {
            "engine": Engine.EXTERNAL.value,
            "exit_status": outcome.exit_status,
            "error": outcome.to_dict(),
        }
    peak = outcome.peak
    # the command's own keys after the engine, then the peak's one JSON (its margin
    # never covered for a failed run)
    head = {"engine": peak.engine.value, "exit_status": peak.exit_status}
    return head | {"failed": peak.failed_status} | peak_json(peak)
