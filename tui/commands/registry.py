"""The `vramscope` subcommands, in the order `--help` lists them.

Each module's `register(subparsers)` adds its parser and sets `func` to the
function that runs it. Command modules stay cheap to import (no Textual, no torch
at module level): the parser of every one is built at each start. A new command
is a module here and one line below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tui.commands import (
    calibrate,
    device,
    explore,
    fit,
    inspect,
    measure,
    models,
    run_command,
    screenshot,
    table,
)

COMMANDS: tuple[Callable[[Any], None], ...] = (
    calibrate.register,
    device.register,
    explore.register,
    fit.register,
    inspect.register,
    measure.register,
    models.register,
    run_command.register,
    screenshot.register,
    table.register,
)
"""Each command's `register`, by name (the order of the parser's list of commands)."""
