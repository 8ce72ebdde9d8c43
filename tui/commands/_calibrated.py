"""`inspect --calibrated` / `--calibration builtin|FILE`: which calibration, and its line.

mlxcel's banner and JSON keys are printed first and untouched; vramscope's calibrated
total follows, labelled as vramscope's.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from core.errors import UsageError
from tui.commands.shared.output import warn


def add_calibration_flags(p: argparse.ArgumentParser) -> None:
    """`--calibrated` and `--calibration`."""
    p.add_argument(
        "--calibrated",
        action="store_true",
        help="also print vramscope's calibrated estimate (your latest `vramscope calibrate`, "
        "else the built-in gfx1151 ROCm one, where the device is gfx1151) beside mlxcel's, "
        "or why none applies",
    )
    p.add_argument(
        "--calibration",
        metavar="builtin|FILE",
        help="the calibration to use: the built-in one, or a calibration file (implies "
        "--calibrated)",
    )
    p.add_argument(
        "--calibration-device",
        metavar="NAME",
        help="the device the estimate is for (e.g. gfx1151, or the CPU as `vramscope "
        "calibrate` names it): a calibration fitted for a named device applies only there",
    )
    p.add_argument(
        "--calibration-engine",
        metavar="E",
        help="only a calibration for this engine (mlx, torch) or for any engine",
    )


def wanted(args: argparse.Namespace) -> bool:
    """True when the user asked for a calibrated estimate."""
    return bool(
        args.calibrated
        or args.calibration is not None
        or args.calibration_device is not None
        or args.calibration_engine is not None
    )


def _candidates(choice: str | None) -> list[Any]:
    from core.calibration.builtin import builtin_calibration
    from core.calibration.record import CalibrationOrigin
    from core.calibration.store import read_store

    if choice == "builtin":
        return [builtin_calibration()]
    if choice is not None:
        path = Path(choice)
        if not path.exists():
            raise UsageError("--calibration", f"{choice}: no such file (or say 'builtin')")
        read = read_store(path, origin=CalibrationOrigin.FILE)
        if read.problem is not None:
            raise UsageError(
                "--calibration", f"{choice}: not a usable calibration file ({read.problem})"
            )
        return list(read.calibrations)
    from core.calibration.select import default_candidates

    cals, warnings = default_candidates()
    warn(warnings)
    return list(cals)


def candidates(args: argparse.Namespace) -> list[Any] | None:
    """The calibrations the answer may choose from (`--calibration`'s, else yours and the
    built-in one), or None when no calibrated estimate was asked for; a usage error for an
    engine `--calibration-engine` does not know."""
    if not wanted(args):
        return None
    from tui.commands.calibrate import engine_flag

    engine_flag("--calibration-engine", args.calibration_engine)
    return _candidates(args.calibration)
