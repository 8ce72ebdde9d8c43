"""The `vramscope` command line.

Subcommands print to stdout and keep warnings on stderr, so the banner and the
JSON stay byte-identical to mlxcel's. Every bad input ends in one line on stderr
and exit code 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from core import __version__
from core.backend import BACKEND_CHOICES, resolve_backend
from core.environment import read_env, resolve_settings
from core.errors import UsageError, VramscopeError
from core.estimate import DEFAULT_CTX_LEN, Workload, estimate, parse_quant_hint
from core.memory_size import parse_optional_memory_size
from core.model import read_model_dir
from core.report import DOES_NOT_FIT_NOTE, format_estimate, inspect_report, to_json_pretty

EXIT_USAGE = 2


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (`vramscope inspect: error: ...`) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _non_negative_int(flag: str, minimum: int) -> argparse._ActionType:  # type: ignore[name-defined]
    def convert(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    convert.__name__ = flag
    return convert


def _add_estimate_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-tokens", "-n", type=_non_negative_int("--max-tokens", 0),
                   default=DEFAULT_CTX_LEN, metavar="N",
                   help=f"context length in tokens (default {DEFAULT_CTX_LEN})")
    p.add_argument("--batch", type=_non_negative_int("--batch", 1), default=1, metavar="N",
                   help="concurrent sequences (default 1)")
    p.add_argument("--kv-cache-mode", choices=("fp16", "int8"), default="fp16",
                   help="KV cache element type (default fp16)")
    p.add_argument("--quant", default="default", metavar="{default,fp16,int8,int4}",
                   help="quantization label (never changes the bytes)")
    p.add_argument("--backend", choices=BACKEND_CHOICES, default="auto",
                   help="backend to estimate for; only rocm adds the in-flight reserve "
                        "(default: this machine's, detected without starting a GPU runtime)")
    p.add_argument("--inflight-mb", metavar="RAW", default=None,
                   help="ROCm in-flight budget in MiB; overrides MLX_ROCM_MAX_INFLIGHT_MB and "
                        "goes through the same parser (0 = bound off)")
    p.add_argument("--memory-limit", metavar="SIZE", default=None,
                   help="available memory, e.g. 64GB, 512M or bytes; beats MLXCEL_MEMORY_LIMIT")


def build_parser() -> OneLineParser:
    """The argument parser of every subcommand."""
    parser = OneLineParser(prog="vramscope",
                           description="Will it fit? mlxcel's pre-load memory estimate, "
                                       "explored live and checked against a real load.")
    parser.add_argument("--version", action="version", version=f"vramscope {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    inspect = sub.add_parser("inspect", help="print the memory estimate of a model",
                             description="Print mlxcel's pre-load memory estimate for MODEL.")
    inspect.add_argument("model", metavar="MODEL", help="a model folder")
    _add_estimate_flags(inspect)
    inspect.add_argument("--json", action="store_true", help="print the JSON report")
    return parser


def _warn(lines: Sequence[str]) -> None:
    for line in lines:
        print(f"vramscope: warning: {line}", file=sys.stderr)


def cmd_inspect(args: argparse.Namespace) -> int:
    """`vramscope inspect`: the banner (or JSON) for one model."""
    try:
        quant = parse_quant_hint(args.quant)
    except ValueError as exc:
        raise UsageError("--quant", str(exc).removeprefix("--quant: ")) from None
    memory_limit = None
    if args.memory_limit is not None:
        memory_limit = parse_optional_memory_size(args.memory_limit)
        if memory_limit is None and args.memory_limit.strip().lower() not in ("", "0", "none"):
            raise UsageError("--memory-limit",
                             f"'{args.memory_limit}' is not a size (e.g. 64GB, 512M, 1073741824)")
    choice = resolve_backend(args.backend)
    resolved = resolve_settings(choice.backend, read_env(), inflight_flag=args.inflight_mb,
                                memory_limit=memory_limit)
    model = read_model_dir(Path(args.model), display=args.model)
    _warn(resolved.warnings + model.warnings)
    workload = Workload(max_tokens=args.max_tokens, batch=args.batch,
                        kv_int8=args.kv_cache_mode == "int8", quant=quant)
    est = estimate(model, workload, resolved.settings)
    if args.json:
        print(to_json_pretty(inspect_report(model, est, __version__)))
        return 0
    print(format_estimate(args.model, est))
    if not est.fits:
        print(DOES_NOT_FIT_NOTE)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `vramscope` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "inspect":
            return cmd_inspect(args)
        parser.print_help()
        return 0
    except VramscopeError as exc:
        print(f"vramscope: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
