"""`vramscope calibrate`: fit vramscope's calibrated estimate to measured runs and save it.

Runs come from the measurement history (a failed run left out unless
`--include-failed`) or a CSV (`--rows`), each held against the formula `table` holds
it against; each (engine, formula, device) is fitted on its own,
or refused with the reason. Fitted calibrations replace the ones of the same key in
`$XDG_STATE_HOME/vramscope/calibration.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import __version__
from core.calibration.targets import DEFAULT_TARGET, TARGET_NAMES, target_named
from core.errors import UsageError
from tui.commands.registry import help_line
from tui.commands.shared.flags import add_model_source_flags
from tui.commands.shared.output import warn

if TYPE_CHECKING:
    from core.measurement.engine import Engine


def register(sub: Any) -> None:
    """Add the `calibrate` parser."""
    p = sub.add_parser(
        "calibrate",
        help=help_line("calibrate"),
        description="Fit vramscope's own calibrated estimate (W + 2 x KV + in-flight + a "
        "fixed part covering every run, then a margin covering each model's runs predicted "
        "from the other models) to measured peaks, per engine, backend and device, with "
        "leave-one-model-out figures beside mlxcel's; saved for `inspect --calibrated`. "
        "Runs of 2 models are fitted with a warning that the fit could not be "
        "cross-validated; runs of 1 are refused. Beside it, vramscope's mlx-lm load is "
        "calibrated on the same runs (its transient scaled, a fixed part added), held out "
        "model by model the same way.",
    )
    p.add_argument(
        "--rows",
        type=Path,
        metavar="FILE.csv",
        help="runs to fit on: columns model, context, inflight_mib, backend, peak_bytes "
        "(optional engine, device, batch, kv_cache_mode, gen_tokens: the context's "
        "generated tokens, for the load's prefill); default: the measurement history",
    )
    p.add_argument(
        "--engine",
        metavar="E",
        help="only runs of this engine (mlx, torch); llama.cpp: fit llama.cpp's compute "
        "buffer from the history's `vramscope run` llama.cpp runs, per architecture "
        "(reported, not saved)",
    )
    p.add_argument(
        "--backend",
        choices=("rocm", "cuda", "metal", "cpu"),
        help="only runs measured on this kind of device",
    )
    p.add_argument("--device", metavar="NAME", help="only runs on this device (e.g. gfx1151)")
    p.add_argument(
        "--target",
        choices=TARGET_NAMES,
        default=DEFAULT_TARGET,
        help="the recorded figure to fit: each engine's own peak (the default: MLX's "
        "mx.get_peak_memory, what mlxcel's published rows are; the torch engine's "
        "allocator peak on a GPU, its RSS over baseline on the CPU; mlx_peak is its old "
        "name), MLX's active + cache peak, or the process's OS peak (VmHWM on the CPU, its "
        "device memory on ROCm)",
    )
    p.add_argument(
        "--include-failed",
        action="store_true",
        help="fit the history's failed runs too (a command that exited nonzero or was "
        "killed: left out by default)",
    )
    p.add_argument("--json", action="store_true", help="print the fit as JSON")
    p.add_argument(
        "--builtin",
        action="store_true",
        help="print the built-in gfx1151 calibration and vramscope's load refitted on "
        "mlxcel's 18 published peaks, each held out model by model beside mlxcel's, and "
        "fit nothing",
    )
    add_model_source_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`vramscope calibrate`: fit, save, print."""
    from core.backend import Backend
    from core.calibration.report import group_lines, refused_json, refused_line
    from core.calibration.run import CannotSave, NothingToCalibrate, calibrate
    from core.catalog.resolve import resolve_model
    from core.display_text import clean_text

    def resolve(name: str) -> Any:
        return resolve_model(name, args.models_dir)

    def tensors_of(name: str, snapshot: Any) -> Any:
        # the load's dimensions as `inspect` reads them (headers or a profile's manifest)
        from core.catalog.split_source import load_tensors

        return load_tensors(name, snapshot, args.models_dir)

    if args.builtin:
        return show_builtin()
    if args.engine is not None and args.engine.strip().lower() == LLAMA_CPP:
        return _llama_cpp(args)
    target = target_named(args.target)
    try:
        done = calibrate(
            resolve,
            __version__,
            rows_file=args.rows,
            target=target,
            engine=engine_flag("--engine", args.engine),
            backend=Backend.named(args.backend, "--backend") if args.backend is not None else None,
            device=args.device,
            include_failed=args.include_failed,
            tensors_of=tensors_of,
        )
    except (NothingToCalibrate, CannotSave) as exc:
        print(f"vramscope: error: {exc}", file=sys.stderr)
        return 2
    warn(done.warnings)
    fitted = done.fitted
    if args.json:
        doc = {
            "vramscope_version": __version__,
            "source": done.source,
            "target": target,
            "saved_to": str(done.saved_to) if done.saved_to else None,
            "calibrations": [c.to_dict() for c in fitted],
            "refused": [refused_json(r) for r in done.results if r.calibration is None],
        }
        print(json.dumps(doc, indent=2, allow_nan=False))
    else:
        for r in done.results:
            if r.calibration is None:
                print(refused_line(r))
            else:
                print("\n".join(group_lines(r)))
        if done.saved_to is not None:
            print(f"Saved {len(fitted)} calibration(s) to {clean_text(str(done.saved_to))}")
    if not fitted:
        for r in done.results:
            print(f"vramscope: error: {refused_line(r)}", file=sys.stderr)
        return 2
    return 0


def show_builtin() -> int:
    """`vramscope calibrate --builtin`: the two built-in fits on mlxcel's gfx1151 peaks."""
    from core.calibration.builtin import builtin_calibration, builtin_load_fit
    from core.calibration.report import calibration_lines, load_fit_lines

    print("\n".join(calibration_lines(builtin_calibration())))
    title = "gfx1151, ROCm, MLX's peak (mlxcel's 18 published runs)"
    print("\n".join(load_fit_lines(builtin_load_fit(), title)))
    return 0


LLAMA_CPP = "llama.cpp"


def _llama_cpp(args: argparse.Namespace) -> int:
    """`calibrate --engine llama.cpp`: llama.cpp's compute buffer against vramscope's,
    per architecture, from the history's llama.cpp runs (#40)."""
    from core.calibration.llama_cpp_compute import compute_runs, factor_lines, fit_compute
    from core.display_text import clean_text
    from core.measurement.history import HistoryStore

    if args.rows is not None:
        raise UsageError("--rows", "--engine llama.cpp fits from the history's runs only")
    store = HistoryStore.default()
    read = store.read()
    if read.unreadable is not None:
        print(f"vramscope: error: {read.unreadable}", file=sys.stderr)
        return 2
    warn(read.warnings)
    runs, left_out = compute_runs(read.results, include_failed=args.include_failed)
    if left_out:
        warn(
            [
                f"{left_out} llama.cpp run(s) left out: failed (--include-failed fits them), "
                "no buffer lines read, or recorded before the architecture was"
            ]
        )
    if not runs:
        where = clean_text(str(store.path))
        print(
            f"vramscope: error: no llama.cpp run with its compute buffer in {where}: "
            "record one with `vramscope run -- llama-server -m FILE.gguf ...`",
            file=sys.stderr,
        )
        return 2
    fits = fit_compute(runs)
    if args.json:
        doc = {
            "vramscope_version": __version__,
            "engine": LLAMA_CPP,
            "source": clean_text(str(store.path)),
            "term": "compute",
            "saved_to": None,
            "fits": [f.to_dict() for f in fits],
        }
        print(json.dumps(doc, indent=2, allow_nan=False))
        return 0
    for f in fits:
        print("\n".join(clean_text(line) for line in factor_lines(f)))
    print("Reported, not saved: the load's compute term stays as fitted to llama.cpp's dry runs")
    return 0


def engine_flag(flag: str, value: str | None) -> Engine | None:
    """The engine a flag names (any case), None when not given; a usage error otherwise."""
    from core.measurement.engine import ENGINE_NAMES, Engine

    if value is None:
        return None
    try:
        return Engine.named(value.strip().lower())
    except ValueError:
        raise UsageError(
            flag, f"'{value}' is not an engine (give {', '.join(ENGINE_NAMES)})"
        ) from None
