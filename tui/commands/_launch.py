"""Flags shared by `explore` and `screenshot`, and their translation into `LaunchOptions`.

Cheap to import: no Textual here; the commands import the app inside `run`.
"""

from __future__ import annotations

import argparse

from tui.commands.common import add_estimate_flags, parse_memory_limit_flag, parse_quant_flag
from tui.model.presets import preset_keys
from tui.model.state import DEFAULT_MODEL, LaunchOptions


def add_launch_flags(p: argparse.ArgumentParser) -> None:
    """`--model`, `--preset` and every estimate flag of `inspect`."""
    p.add_argument(
        "--model",
        "-m",
        default=DEFAULT_MODEL,
        metavar="MODEL",
        help="model to open: a folder, a profile name or a cached repo id "
        f"(default {DEFAULT_MODEL})",
    )
    add_estimate_flags(p)
    p.add_argument(
        "--preset",
        choices=preset_keys(),
        default=None,
        help="available memory of a device preset (MLX's limit on that device)",
    )


def launch_options(args: argparse.Namespace) -> LaunchOptions:
    """Validate the flags (one-line usage errors) and build the app's starting options."""
    quant = parse_quant_flag(args.quant)
    limit = parse_memory_limit_flag(args.memory_limit)
    return LaunchOptions(
        model=args.model,
        max_tokens=args.max_tokens,
        batch=args.batch,
        kv_int8=args.kv_cache_mode == "int8",
        quant=quant,
        backend=args.backend,
        inflight_raw=args.inflight_mb,
        memory_limit=limit,
        preset=args.preset,
        models_dirs=tuple(args.models_dir),
    )
