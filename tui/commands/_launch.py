"""Flags shared by `explore` and `screenshot`, and their translation into `LaunchOptions`.

Cheap to import: no Textual here; the commands import the app inside `run`.
"""

from __future__ import annotations

import argparse

from core.errors import UsageError
from core.estimate import parse_quant_hint
from core.memory_size import parse_optional_memory_size
from tui.commands.common import add_estimate_flags
from tui.presets import preset_keys
from tui.state import DEFAULT_MODEL, LaunchOptions


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
    try:
        quant = parse_quant_hint(args.quant)
    except ValueError as exc:
        raise UsageError("--quant", str(exc).removeprefix("--quant: ")) from None
    limit = None
    if args.memory_limit is not None:
        limit = parse_optional_memory_size(args.memory_limit)
        if limit is None and args.memory_limit.strip().lower() not in ("", "0", "none"):
            raise UsageError(
                "--memory-limit",
                f"'{args.memory_limit}' is not a size (e.g. 64GB, 512M, 1073741824)",
            )
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
