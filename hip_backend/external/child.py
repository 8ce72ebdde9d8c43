"""`python -m hip_backend.external.child CMD ARGS...`: the user's command, held by a
process that dies with vramscope.

The command is any program, so it cannot watch its parent itself. This small process
leads the command's process group, watches vramscope (`parent_watch`: once vramscope is
gone, SIGKILL to the whole group), starts the command in the group, waits for it and
exits with its status (128 + N when a signal N ended it). The user's own PYTHONPATH is
given back to the command (vramscope's root was put first only to import this), and
the command's own largest resident set (`ru_maxrss` of the waited children, which a
sample can miss when a process ends between two; only when above this process's own,
which a child's figure starts from) goes to the file
`VRAMSCOPE_RUN_REPORT` names, with the reason when the command could not start.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

from core.probes.proc_status import read_status
from hip_backend.external import REPORT_ENV, START_FAILED, USER_PYTHONPATH_ENV
from hip_backend.parent_watch import watch_parent


def _report(data: dict[str, object]) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    try:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(data, out)
    except OSError:
        pass  # the parent then has the samples only


def _own_hwm() -> int:
    """This process's own VmHWM in bytes (0 where /proc does not say)."""
    status = read_status(os.getpid())
    return status.hwm_bytes if status is not None else 0


def _command_env() -> dict[str, str]:
    env = dict(os.environ)
    for key in (REPORT_ENV, USER_PYTHONPATH_ENV):
        env.pop(key, None)
    user = os.environ.get(USER_PYTHONPATH_ENV)
    if user is None:
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = user
    return env


def main(argv: list[str]) -> int:
    """Run `argv` in this process's group; its exit status."""
    watch_parent()
    try:
        command = subprocess.Popen(argv, env=_command_env())
    except OSError as exc:
        _report({"error": f"cannot run {argv[0]!r}: {exc.strerror or exc}"})
        return START_FAILED
    while True:
        try:
            status = command.wait()
            break
        except KeyboardInterrupt:  # the group is being stopped: wait for the command
            continue
    maxrss = int(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) * 1024  # KiB
    # A child's ru_maxrss starts from this process's own pages, shared or copied at the
    # fork and counted until the exec: only a figure above them is the command's own.
    # This process's high-water mark is read now, not before the command was started:
    # starting it (`subprocess`) grows this process too, and the child's figure then
    # came out a few pages above the one read before, passed for the command's own.
    own_peak = _own_hwm()
    _report({"maxrss_bytes": maxrss if maxrss > own_peak else None})
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
