"""The `vramscope` subcommands, in the order `--help` lists them.

Each command's module has a `register(subparsers)` that adds its parser and sets
`func` to the function that runs it. A start imports only the module of the
command it runs: the others' flags import their own parts of `core` (measurement,
calibration, the device probes), which `vramscope explore` would otherwise pay for
before its first frame. `--help` lists every command from the one-line helps
below, which a test holds equal to each module's own. A new command is a module
here and one line below.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its line in `--help`, and the module that registers it."""

    name: str
    help: str
    module: str

    def register(self, sub: Any) -> None:
        """Add the full parser (the module is imported only now)."""
        importlib.import_module(f"tui.commands.{self.module}").register(sub)

    def register_stub(self, sub: Any) -> None:
        """Add a parser that only names the command, for `--help`'s list."""
        sub.add_parser(self.name, help=self.help)


COMMANDS: tuple[Command, ...] = (
    Command("calibrate", "fit vramscope's calibrated estimate to measured peaks", "calibrate"),
    Command(
        "device",
        "print every memory figure of this machine, with its source, and the budget",
        "device",
    ),
    Command("explore", "explore the estimate live in a terminal UI (the default)", "explore"),
    Command(
        "fit", "rank every model by what fits, as stored and as mlx-lm would quantize it", "fit"
    ),
    Command("inspect", "print the memory estimate of a model", "inspect"),
    Command(
        "measure", "load a model (torch engine or real MLX) and measure its peak memory", "measure"
    ),
    Command("models", "list the models vramscope can name", "models"),
    Command(
        "run",
        "run your own command (mlx-lm, mlxcel, llama.cpp, ...) and hold its peak "
        "against the estimate",
        "run_command",
    ),
    Command(
        "screenshot", "render the explorer to an SVG (or PNG) file without a terminal", "screenshot"
    ),
    Command(
        "table", "measure models over contexts and in-flight budgets; write the table", "table"
    ),
)
"""Every command, by name (the order of the parser's list of commands)."""

NAMES = frozenset(command.name for command in COMMANDS)


def help_line(name: str) -> str:
    """The command's line in `--help` (its module's parser says the same)."""
    return next(command.help for command in COMMANDS if command.name == name)
