"""`vramscope explore` (and `vramscope` alone): the interactive memory-budget explorer."""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from dataclasses import replace
from typing import Any

from core.errors import UsageError
from tui.commands.registry import help_line
from tui.commands.shared.estimate_args import launch_options
from tui.commands.shared.flags import add_launch_flags
from tui.commands.shared.gguf_args import (
    add_llama_cpp_flags,
    given_flags,
    llama_cpp_options,
    mlxcel_flags_given,
    refuse_mlxcel_flags,
)
from tui.model.state import LaunchOptions
from tui.out_of_memory import check_room_to_start


def register(sub: Any) -> None:
    """Add the `explore` parser."""
    p = sub.add_parser(
        "explore",
        help=help_line("explore"),
        description="Open the memory-budget explorer: pick a model, move the sliders, "
        "watch every term of the estimate.",
    )
    p.add_argument(
        "model_given",
        nargs="?",
        default=None,
        metavar="MODEL",
        help="the model to open, as inspect takes it (the same as --model): a folder, a "
        "profile name, a repo id, a .gguf file, a folder of GGUF files or REPO:QUANT",
    )
    add_launch_flags(p)
    add_llama_cpp_flags(p)
    p.set_defaults(func=run)


def llama_launch(args: argparse.Namespace, options: LaunchOptions) -> LaunchOptions:
    """The options with llama.cpp's flags set, as `inspect` reads them for a GGUF; a
    one-line UsageError for them on a model that is not a GGUF, and for mlxcel's own
    flags on a GGUF, as `inspect` gives."""
    given = given_flags(args)
    if not given and not mlxcel_flags_given(args):
        return options
    from core.catalog.gguf_source import names_gguf

    gguf = names_gguf(options.model)
    if gguf:
        refuse_mlxcel_flags(args)
    if not given:
        return options
    if not gguf:
        raise UsageError(given[0], "is llama.cpp's, for a GGUF model only")
    read = llama_cpp_options(args)
    return replace(options, llama_cpp=read.options, notes=read.notes)


def run(args: argparse.Namespace) -> int:
    """Run the explorer until the user quits."""
    if args.model_given is not None:  # `explore MODEL`, as `inspect MODEL`
        args.model = args.model_given
    options = llama_launch(args, launch_options(args))
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            "vramscope: error: the explorer needs a terminal; "
            "use `vramscope inspect` or `vramscope screenshot` instead",
            file=sys.stderr,
        )
        return 2
    check_room_to_start("the explorer")  # before Textual and its threads
    if sys.platform != "win32":
        from tui.process_exit import exit_on_stop_signals

        # SIGTERM or SIGHUP while Textual is imported and the app built: ended by the
        # signal (a shell's 143 or 129), the terminal untouched; the terminal driver
        # takes them over as it starts.
        exit_on_stop_signals()
    # Importing Textual and building the screen make objects by the hundred thousand,
    # and the collector, walking them again and again, took 10-15% of the time to the
    # first frame: no collection until the first frame is out and the body mounted
    # (the app turns it back on then), and what is imported, which lives as long as the
    # process, out of its walks from then on (the body's code and widgets too).
    gc.disable()
    from tui.app import make_app  # Textual is imported only when the explorer opens

    gc.freeze()
    app = make_app(options=options)
    app.run()
    code = app.return_code or 0
    # The terminal is restored and nothing is left to write: end here. The interpreter's
    # own shutdown (collecting Textual's objects) took 0.4 s more on a loaded machine,
    # and blocks the driver's deadline thread meanwhile (tui/terminal_driver.py).
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    try:
        from tui.terminal_driver import end_now
    except ImportError:  # no termios (Windows): Textual's own driver, a normal exit
        return code
    end_now(code)
