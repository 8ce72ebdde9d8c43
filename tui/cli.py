"""The `vramscope` command line.

Subcommands print to stdout and keep warnings on stderr, so the banner and the
JSON stay byte-identical to mlxcel's. Every bad input ends in one line on stderr
and exit code 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import re
from collections.abc import Sequence
from typing import NoReturn

from core import __version__
from core.display_text import cap_echoes, clean_text
from core.errors import VramscopeError
from tui.commands.registry import COMMANDS, NAMES
from tui.commands.shared.signals import exit_status
from tui.out_of_memory import install_hooks, is_out_of_memory, out_of_memory_line

EXIT_USAGE = 2
EXIT_CLOSED_PIPE = 141
"""128 + SIGPIPE: stdout's reader went away (`| head`); said by no line."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (`vramscope inspect: error: ...`) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        line = cap_echoes(clean_text(f"{self.prog}: error: {message} (see --help)"))
        self.exit(EXIT_USAGE, line + "\n")


def build_parser(only: str | None = None) -> OneLineParser:
    """The argument parser of every subcommand; with `only`, that command's in full and
    the others as their names and one-line helps (`--help`'s list), so a start imports
    only the module of the command it runs."""
    parser = OneLineParser(
        prog="vramscope",
        description="Will it fit? mlxcel's pre-load memory estimate, "
        "explored live and checked against a real load.",
    )
    parser.add_argument("--version", action="version", version=f"vramscope {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    for command in COMMANDS:
        if only is None or command.name == only:
            command.register(sub)
        else:
            command.register_stub(sub)
    return parser


_VALUE_FLAGS = frozenset(
    [
        "--memory-limit",
        "--memory-cap",
        "--max-tokens",
        "-n",
        "--prompt-tokens",
        "--gen-tokens",
        "--warmup-tokens",
        "--batch",
        "--inflight-mb",
        "--tp",
        "--pp",
    ]
)
_SIGNED = re.compile(r"-[0-9.]")


def join_signed_values(words: list[str]) -> list[str]:
    """`--memory-limit -24GB` as `--memory-limit=-24GB`: argparse takes a word that starts
    with `-` and is not a plain number for a flag, and would refuse the value unnamed
    ("expected one argument"); joined, the value's own parser refuses it by name."""
    out: list[str] = []
    for word in words:
        if out and out[-1] in _VALUE_FLAGS and _SIGNED.match(word):
            out[-1] = f"{out[-1]}={word}"
        else:
            out.append(word)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `vramscope` console script."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        # A last line of defence: a folder name that is not UTF-8 is never a traceback.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")
    install_hooks()
    words = list(sys.argv[1:] if argv is None else argv)
    if words and words[0].startswith("-") and words[0] not in ("-h", "--help", "--version"):
        words = ["explore", *words]  # `vramscope --models-dir X` is the explorer's flag
    # No subcommand opens the explorer in a terminal; piped, it prints the help.
    explorer = not words and sys.stdin.isatty() and sys.stdout.isatty()
    chosen = "explore" if explorer else next(iter(words[:1]), "")
    parser = build_parser(chosen if chosen in NAMES else "")
    args = parser.parse_args(join_signed_values(words))
    try:
        if args.command is None:
            if not explorer:
                parser.print_help()
                return 0
            args = parser.parse_args(["explore"])
        code = int(args.func(args))
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not at exit
        return code
    except VramscopeError as exc:
        print(f"vramscope: error: {cap_echoes(clean_text(str(exc)))}", file=sys.stderr)
        return EXIT_USAGE
    except (MemoryError, RuntimeError) as exc:
        if not is_out_of_memory(exc):
            raise
        print(out_of_memory_line(exc), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # Ctrl-C; SIGTERM too, inside measure and table
        return exit_status(exc)
    except OSError as exc:
        # Writing the answer failed (ENOSPC on `> /dev/full`, EACCES on --out): one line
        # naming where, never a traceback. Errors reading inputs are VramscopeErrors
        # above; an OSError that reaches here is an output one.
        _quiet_stdout()
        if exc.errno == errno.EPIPE and not exc.filename:
            # `vramscope device | head`: the reader has what it wanted. Quiet, with the
            # status of a tool that SIGPIPE ended (`yes | head`), as every command.
            return EXIT_CLOSED_PIPE
        where = exc.filename if exc.filename else "stdout"
        reason = exc.strerror or type(exc).__name__
        print(f"vramscope: error: cannot write {clean_text(str(where))}: {reason}", file=sys.stderr)
        return EXIT_USAGE


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush of the unwritten
    buffer does not print its own error after ours."""
    import os
    import sys

    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
