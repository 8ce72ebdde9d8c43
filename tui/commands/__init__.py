"""One module per `vramscope` subcommand.

Each module exposes `register(subparsers)`, which adds its parser and sets
`func` to the function that runs it. Modules must stay cheap to import: no
Textual, no torch at module level.
"""

COMMAND_MODULES = ("inspect",)
