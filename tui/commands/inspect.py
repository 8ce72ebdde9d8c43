"""`vramscope inspect MODEL`: mlxcel's banner or JSON report for one model."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from core import __version__
from core.errors import UsageError
from core.estimate.estimate import DEFAULT_CTX_LEN
from core.units import format_bytes_short
from tui.commands._calibrated import add_calibration_flags, candidates, wanted
from tui.commands._parallel import parallel_plan, run_parallel
from tui.commands.registry import help_line
from tui.commands.shared.estimate_args import parse_quant_flag, question_from_args
from tui.commands.shared.flags import (
    add_estimate_flags,
    add_hub_flags,
    add_parallel_flags,
    add_preset_flag,
    hub_options,
)
from tui.commands.shared.gguf_args import add_llama_cpp_flags, given_flags, refuse_mlxcel_flags
from tui.commands.shared.output import EXIT_ERROR, EXIT_FAILED, note, warn
from tui.model.sizing import mlxcel_sizing, sizing_lines


def register(sub: Any) -> None:
    """Add the `inspect` parser."""
    p = sub.add_parser(
        "inspect",
        help=help_line("inspect"),
        description="Print mlxcel's pre-load memory estimate for MODEL; for a GGUF model, "
        "llama.cpp's load instead (mlxcel reads no GGUF), under llama.cpp's flags, at the "
        "model's trained context unless --max-tokens/--ctx-size says otherwise.",
    )
    p.add_argument(
        "model",
        metavar="MODEL",
        help="a model folder, a built-in profile name, a repo id in the local HF cache, "
        "or any repo id on the Hub (config and safetensors headers only); a GGUF file, "
        "a folder of GGUF files, or REPO:QUANT on the Hub (its header only)",
    )
    add_estimate_flags(p)
    add_preset_flag(p)
    add_hub_flags(p)
    p.add_argument("--json", action="store_true", help="print the JSON report")
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also print what mlxcel would size from the estimate (paged-KV auto budget, "
        "prompt-cache capacity, --recommend-quant)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the estimate does not fit (every rank, with --tp/--pp), 0 when it "
        "fits, 2 when the available memory could not be read; the banner and JSON are "
        "unchanged",
    )
    add_parallel_flags(p)
    add_calibration_flags(p)
    add_llama_cpp_flags(p)
    # None: not given. A safetensors model takes mlxcel's default; a GGUF llama.cpp's
    # (the trained context, `--ctx-size 0`).
    p.set_defaults(func=run, max_tokens=None)


def run(args: argparse.Namespace) -> int:
    """`vramscope inspect`: the banner (or JSON) for one model, and vramscope's lines."""
    # Imported here, not with the parser: the explorer's start-up never needs them.
    from core.answer.answer import Answer, answer
    from core.answer.question import ModelFacts
    from core.answer.report import answer_json, answer_lines
    from core.catalog.resolve import resolve_model_entry
    from core.catalog.split_source import load_tensors
    from core.estimate.report import (
        DOES_NOT_FIT_NOTE,
        format_estimate,
        inspect_report,
        to_json_pretty,
    )

    gguf = _read_gguf(args)
    if gguf is not None:
        return gguf
    llama_flags = given_flags(args)
    if llama_flags:
        raise UsageError(llama_flags[0], "is llama.cpp's, for a GGUF model only")
    if args.max_tokens is None:
        args.max_tokens = DEFAULT_CTX_LEN
    quant = parse_quant_flag(args.quant)
    if parallel_plan(args) is not None:
        if wanted(args):
            raise UsageError("--calibrated", "a calibrated estimate is single-device only")
        return run_parallel(args, quant)  # --check: exit 1 unless every rank fits
    inputs = question_from_args(args, quant, identify=wanted(args))
    note(inputs.notes)
    model, entry = resolve_model_entry(args.model, args.models_dir, hub=hub_options(args))
    note(model.notes)
    warn(inputs.warnings + model.warnings)
    # The tensor shapes size vramscope's load (headers only, already read once).
    tensors = load_tensors(args.model, model, args.models_dir)
    found = answer(
        ModelFacts(model, args.model, tensors=tensors),
        inputs.question,
        candidates(args),
        args.calibration_engine,
    )
    assert isinstance(found, Answer)  # a stored model always has a number
    if found.fits is False and found.what_if is None:
        # The advice suggests a quantization that fits (docs/estimate.md): its weights
        # are read only now, from the tensor list fit reads them from.
        from core.fit.models import stored_what_ifs

        folder = Path(args.model) if entry is None else None
        what_ifs = stored_what_ifs(model, entry, folder)
        facts = ModelFacts(model, args.model, what_ifs, tensors=tensors)
        refound = answer(facts, inputs.question, candidates(args), args.calibration_engine)
        assert isinstance(refound, Answer)
        found = refound
    est = found.estimate
    warn(est.warnings)
    device = found.question.device
    calibrated = found.calibrated
    if args.json:
        report = inspect_report(model, est, __version__)
        report |= answer_json(found)  # vramscope's, after mlxcel's keys
        if calibrated is not None:
            from core.calibration.report import calibrated_json, calibrated_load_json

            cal = calibrated.calibration
            report["calibrated"] = calibrated_json(cal, est) if cal is not None else None
            if cal is not None:  # the load calibrated, beside the mlxcel-form keys
                load = found.load if calibrated.load_line else None
                report["calibrated"]["load"] = (
                    calibrated_load_json(cal, load, est.available_bytes) if load else None
                )
            if calibrated.calibration is None:
                warn([calibrated.line.strip()])
        print(to_json_pretty(report))
        return check_exit(args, est.fits, device.available.unread)
    print(format_estimate(args.model, est, model.source))
    if not est.fits:
        print(DOES_NOT_FIT_NOTE)
    print("\n".join(answer_lines(found)))
    if device.reading is not None:  # vramscope's lines: which device and which figure
        chosen = device.available
        print(
            f"vramscope --memory-limit {device.memory.value}: "
            f"{format_bytes_short(chosen.bytes)} ({chosen.bytes} bytes): {chosen.source}"
        )
        print(f"vramscope {device.reading.line}")
    if calibrated is not None:
        print(calibrated.line)
        if calibrated.load_line:
            print(calibrated.load_line)
    if args.verbose:
        settings = found.question.settings
        sizing = mlxcel_sizing(model, settings, args.max_tokens, args.batch)
        print("\n".join(sizing_lines(sizing, settings.available, found.advice)))
    return check_exit(args, est.fits, device.available.unread)


def _read_gguf(args: argparse.Namespace) -> int | None:
    """A GGUF model (`.gguf`, a folder of them, `REPO:QUANT`): what was read and
    llama.cpp's load for it; None when MODEL names no GGUF."""
    from core.catalog.gguf_source import read_gguf_source

    found = read_gguf_source(args.model, hub_options(args))
    if found is None:
        return None
    from core.estimate.report import to_json_pretty
    from core.gguf.report import gguf_json, gguf_lines
    from core.gguf_load.report import gguf_load_json, gguf_load_lines
    from tui.commands.shared.gguf_answer import answer_for

    if parallel_plan(args) is not None:
        raise UsageError("--tp/--pp", "no split plan for a GGUF model (llama.cpp's load only)")
    if wanted(args):
        raise UsageError("--calibrated", "no calibrated estimate for a GGUF model (#40)")
    refuse_mlxcel_flags(args)
    got = answer_for(args, found)
    note(got.notes)
    warn(got.warnings)
    answered = got.answer
    if args.json:
        report = gguf_json(found.model, args.model, found.source)
        report["mlxcel_estimate"] = None  # mlxcel reads no GGUF: none of its keys
        report["answered_for"] = got.device_json
        report["load"] = gguf_load_json(answered) if answered is not None else None
        report["load_unavailable"] = got.problem
        print(to_json_pretty(report))
    else:
        print("\n".join(gguf_lines(found.model, args.model, found.source)))
        print("\n".join(gguf_load_lines(answered) if answered is not None else got.problem_lines))
        print("\n".join(got.device_lines))
    if answered is None:
        # No load (an architecture llama.cpp's plan cannot size): no verdict to claim.
        return EXIT_ERROR if args.check else 0
    return check_exit(args, bool(answered.fits), answered.unread)


def check_exit(args: argparse.Namespace, fits: bool, unread: str | None = None) -> int:
    """`--check`: 1 when it does not fit, so a script can branch; 0 otherwise; 2 (an
    error) when the available memory was never read: no verdict is claimed from it."""
    if args.check and unread is not None:
        return EXIT_ERROR
    return EXIT_FAILED if args.check and not fits else 0
