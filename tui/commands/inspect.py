"""`vramscope inspect MODEL`: mlxcel's banner or JSON report for one model."""

from __future__ import annotations

import argparse
from typing import Any

from core import __version__
from core.backend import resolve_backend
from core.device.memory import MEMORY_CHOICES, device_available
from core.errors import UsageError
from core.estimate.estimate import estimate
from core.units import format_bytes_short
from tui.commands._calibrated import add_calibration_flags, calibrated_output, wanted
from tui.commands._parallel import parallel_plan, run_parallel
from tui.commands.shared.estimate_args import (
    estimate_inputs,
    parse_memory_limit_flag,
    parse_quant_flag,
)
from tui.commands.shared.flags import (
    add_estimate_flags,
    add_hub_flags,
    add_parallel_flags,
    add_preset_flag,
    hub_options,
)
from tui.commands.shared.output import EXIT_FAILED, note, warn
from tui.model.sizing import mlxcel_sizing, sizing_lines


def register(sub: Any) -> None:
    """Add the `inspect` parser."""
    p = sub.add_parser(
        "inspect",
        help="print the memory estimate of a model",
        description="Print mlxcel's pre-load memory estimate for MODEL.",
    )
    p.add_argument(
        "model",
        metavar="MODEL",
        help="a model folder, a built-in profile name, a repo id in the local HF cache, "
        "or any repo id on the Hub (config and safetensors headers only)",
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
        "fits; the banner and JSON are unchanged",
    )
    add_parallel_flags(p)
    add_calibration_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`vramscope inspect`: the banner (or JSON) for one model."""
    # Imported here, not with the parser: the explorer's start-up never needs them.
    from core.catalog.resolve import resolve_model
    from core.estimate.report import (
        DOES_NOT_FIT_NOTE,
        format_estimate,
        inspect_report,
        to_json_pretty,
    )

    quant = parse_quant_flag(args.quant)
    if parallel_plan(args) is not None:
        if wanted(args):
            raise UsageError("--calibrated", "a calibrated estimate is single-device only")
        return run_parallel(args, quant)  # --check: exit 1 unless every rank fits
    device, which = None, (args.memory_limit or "").strip().lower()
    if which in MEMORY_CHOICES:  # vramscope's own reading; mlxcel's banner then uses it
        available, device = device_available(which, resolve_backend(args.backend).backend)
        note(device.notes)
        inputs = estimate_inputs(args, quant, available=available)
    else:
        inputs = estimate_inputs(args, quant, parse_memory_limit_flag(args.memory_limit))
    resolved = inputs.resolved
    model = resolve_model(args.model, args.models_dir, hub=hub_options(args))
    note(model.notes)
    warn(resolved.warnings + model.warnings)
    est = estimate(model, inputs.workload, resolved.settings)
    warn(est.warnings)
    calibrated = (
        calibrated_output(args, est, resolved.settings.backend.value) if wanted(args) else None
    )
    if args.json:
        report = inspect_report(model, est, __version__)
        if calibrated is not None:
            line, report["calibrated"] = calibrated  # vramscope's, after mlxcel's keys
            if report["calibrated"] is None:
                warn([line.strip()])
        if device is not None:  # vramscope's, after mlxcel's keys
            report["device"] = {
                "memory_limit": which,
                "available_bytes": resolved.settings.available.bytes,
                "available_source": resolved.settings.available.source,
                **device.json(),
            }
        print(to_json_pretty(report))
        return check_exit(args, est.fits)
    print(format_estimate(args.model, est, model.source))
    if not est.fits:
        print(DOES_NOT_FIT_NOTE)
    if device is not None:  # vramscope's lines: which device and which figure
        chosen = resolved.settings.available
        print(
            f"vramscope --memory-limit {which}: {format_bytes_short(chosen.bytes)} "
            f"({chosen.bytes} bytes): {chosen.source}"
        )
        print(f"vramscope {device.line}")
    if calibrated is not None:
        print(calibrated[0])
    if args.verbose:
        sizing = mlxcel_sizing(model, resolved.settings, args.max_tokens, args.batch)
        print("\n".join(sizing_lines(sizing, resolved.settings.available)))
    return check_exit(args, est.fits)


def check_exit(args: argparse.Namespace, fits: bool) -> int:
    """`--check`: 1 when it does not fit, so a script can branch; 0 otherwise."""
    return EXIT_FAILED if args.check and not fits else 0
