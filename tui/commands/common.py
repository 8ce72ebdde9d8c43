"""Flags and helpers shared by subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.backend import BACKEND_CHOICES
from core.display_text import clean_text
from core.errors import UsageError
from core.estimate.estimate import DEFAULT_CTX_LEN, QuantHint, parse_quant_hint
from core.hub import DEFAULT_TIMEOUT_S
from core.memory_size import parse_optional_memory_size
from core.numbers import decimal_to_int
from core.units import U64_MAX

if TYPE_CHECKING:
    from core.hub.remote import HubOptions

# Durations above a week are refused: timers cannot take inf, nan or 1e308 seconds.
MAX_DURATION_S = 7 * 24 * 3600


def _shown(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def int_at_least(flag: str, minimum: int, maximum: int = U64_MAX) -> Callable[[str], int]:
    """An argparse type: a decimal integer in [`minimum`, `maximum`] (u64 by default,
    as mlxcel's flags are), never a traceback on a 5000-digit value."""

    def convert(text: str) -> int:
        digits = text.strip()
        negative = digits.startswith("-")
        digits = digits[1:] if digits[:1] in "+-" else digits
        value = decimal_to_int(digits) if digits.isascii() and digits.isdigit() else None
        if value is None and digits.isascii() and digits.isdigit():
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got '{_shown(text)}'")
        if value is None:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{_shown(text)}'")
        value = -value if negative else value
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {value}")
        return value

    convert.__name__ = flag
    return convert


def duration_seconds(flag: str) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds in (0, MAX_DURATION_S]."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number of seconds, got '{_shown(text)}'"
            ) from None
        if not 0 < value <= MAX_DURATION_S:  # also refuses nan and inf
            raise argparse.ArgumentTypeError(
                f"must be more than 0 and at most {MAX_DURATION_S} seconds (a week), "
                f"got '{_shown(text)}'"
            )
        return value

    convert.__name__ = flag
    return convert


def add_estimate_flags(p: argparse.ArgumentParser) -> None:
    """The flags that shape an estimate, shared by inspect, measure and screenshot."""
    add_model_source_flags(p)
    p.add_argument(
        "--max-tokens",
        "-n",
        type=int_at_least("--max-tokens", 0),
        default=DEFAULT_CTX_LEN,
        metavar="N",
        help=f"context length in tokens (default {DEFAULT_CTX_LEN})",
    )
    p.add_argument(
        "--batch",
        type=int_at_least("--batch", 1),
        default=1,
        metavar="N",
        help="concurrent sequences (default 1)",
    )
    p.add_argument(
        "--kv-cache-mode",
        choices=("fp16", "int8"),
        default="fp16",
        help="KV cache element type (default fp16)",
    )
    p.add_argument(
        "--quant",
        default="default",
        metavar="{default,fp16,int8,int4}",
        help="quantization label (never changes the bytes)",
    )
    p.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default="auto",
        help="backend to estimate for; only rocm adds the in-flight reserve "
        "(default: this machine's, detected without starting a GPU runtime)",
    )
    p.add_argument(
        "--inflight-mb",
        metavar="RAW",
        default=None,
        help="ROCm in-flight budget in MiB; overrides MLX_ROCM_MAX_INFLIGHT_MB and "
        "goes through the same parser (0 = bound off)",
    )
    p.add_argument(
        "--memory-limit",
        metavar="SIZE",
        default=None,
        help="available memory, e.g. 64GB, 512M or bytes; beats MLXCEL_MEMORY_LIMIT",
    )


def add_model_source_flags(p: argparse.ArgumentParser) -> None:
    """`--models-dir DIR`, repeatable: extra folders to look for models in."""
    p.add_argument(
        "--models-dir",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a folder of model folders to search (repeatable; also VRAMSCOPE_MODELS_DIR)",
    )


def add_hub_flags(p: argparse.ArgumentParser) -> None:
    """`--revision`, `--offline`, `--hub-timeout`: how a repo id not on disk is read."""
    p.add_argument(
        "--revision",
        metavar="REV",
        default=None,
        help="branch, tag or commit to read from the Hub (default main)",
    )
    p.add_argument(
        "--offline",
        action="store_true",
        help="never reach the Hub: answer from what was read before (as HF_HUB_OFFLINE=1)",
    )
    p.add_argument(
        "--hub-timeout",
        type=duration_seconds("--hub-timeout"),
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up on a Hub request after this long (default {DEFAULT_TIMEOUT_S:g})",
    )


def hub_options(args: argparse.Namespace) -> HubOptions:
    """The Hub flags as options, with progress lines on stderr."""
    from core.hub.remote import HubOptions

    def progress(line: str) -> None:
        print(f"vramscope: {clean_text(line)}", file=sys.stderr, flush=True)

    revision = args.revision
    if revision is not None and not revision.strip():
        raise UsageError("--revision", "is empty")
    return HubOptions(
        revision=revision, offline=args.offline, timeout_s=args.hub_timeout, progress=progress
    )


def parse_quant_flag(text: str) -> QuantHint:
    """`--quant`: mlxcel's aliases, or a one-line usage error."""
    try:
        return parse_quant_hint(text)
    except ValueError as exc:
        raise UsageError("--quant", str(exc).removeprefix("--quant: ")) from None


def parse_memory_limit_flag(text: str | None) -> int | None:
    """`--memory-limit`: a size, or 0/none for "not set"; anything else is a usage error."""
    if text is None:
        return None
    limit = parse_optional_memory_size(text)
    if limit is None and text.strip().lower() not in ("", "0", "none"):
        raise UsageError("--memory-limit", f"'{text}' is not a size (e.g. 64GB, 512M, 1073741824)")
    return limit


def note(lines: Sequence[str]) -> None:
    """Print note lines (not faults: where an answer came from) to stderr."""
    for line in lines:
        print(f"vramscope: note: {clean_text(line)}", file=sys.stderr)


def warn(lines: Sequence[str]) -> None:
    """Print warning lines to stderr, one line each."""
    for line in lines:
        print(f"vramscope: warning: {clean_text(line)}", file=sys.stderr)
