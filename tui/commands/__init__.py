"""One module per `vramscope` subcommand, listed in `tui.commands.registry`, and the
modules they share: `flags` (every shared flag), `estimate_args` and `measure_args`
(what the commands build from parsed flags), `output` (warnings, progress, failures)."""
