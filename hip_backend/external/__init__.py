"""The user's own command, measured from outside (`vramscope run -- CMD`): `run`
starts and samples it, `sampler` reads its processes, `child` holds it in a group
that dies with vramscope, `record` makes the run a history record.

What the holder (`child`) and the run share is here, so that running the holder with
`python -m` never imports it twice.
"""

REPORT_ENV = "VRAMSCOPE_RUN_REPORT"
"""The file the holder writes the command's `ru_maxrss` (or why it did not start) to."""
USER_PYTHONPATH_ENV = "VRAMSCOPE_USER_PYTHONPATH"
"""The user's PYTHONPATH, or unset when they had none."""
START_FAILED = 2
"""The holder's exit status when the command could not start (vramscope's own error)."""
TOKEN_ENV = "VRAMSCOPE_RUN_TOKEN"
"""The run's token: every process of the command inherits it (`tree`)."""
CGROUP_ENV = "VRAMSCOPE_RUN_CGROUP"
"""The cgroup v2 the holder joins before starting the command, where one was made."""
TERMINAL_ENV = "VRAMSCOPE_RUN_TERMINAL"
"""Set when the command is to run in the foreground of vramscope's terminal."""
LOG_ENV = "VRAMSCOPE_RUN_LOG"
"""Where the holder keeps a copy of the command's stderr (tee'd: the terminal still gets
all of it), when vramscope reads the command's own log (llama.cpp's buffer lines)."""
LOG_CAP = 8 * 1024 * 1024
"""The most of the command's stderr kept (llama.cpp's buffer lines come in the first
kilobytes; a server that logs for hours keeps writing to the terminal alone)."""
