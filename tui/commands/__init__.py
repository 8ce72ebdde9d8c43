"""One module per `vramscope` subcommand.

Each module exposes `register(subparsers)`, which adds its parser and sets
`func` to the function that runs it. Modules must stay cheap to import: no
Textual, no torch at module level. New modules are picked up automatically.
"""

from __future__ import annotations

import pkgutil
from pathlib import Path

_NOT_COMMANDS = frozenset({"common"})


def command_modules() -> tuple[str, ...]:
    """Names of the subcommand modules in this package, sorted."""
    return tuple(
        sorted(
            m.name
            for m in pkgutil.iter_modules([str(Path(__file__).parent)])
            if not m.name.startswith("_") and m.name not in _NOT_COMMANDS
        )
    )
