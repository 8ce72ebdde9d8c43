"""`python -m hip_backend.external.child CMD ARGS...`: the user's command, held by a
process that dies with vramscope.

The command is any program, so it cannot watch its parent itself. This small process
(the holder) joins the run's cgroup where vramscope made one (`tree`), starts the
command in a process group of the command's own, apart from the holder's (so that
`kill 0` in the command reaches the command alone), and, when vramscope runs in the foreground
of a terminal, makes the command's group the terminal's foreground: `/dev/tty`, Ctrl-C
and Ctrl-Z reach the command as if it ran alone. The holder ignores the terminal's
signals itself (the command gets the dispositions vramscope had), and watches vramscope
(`parent_watch`): once vramscope is gone, every process of the run is killed
(`tree.kill_own_tree`).

The holder waits for the command with `wait4`, which gives the command's own rusage: its
`ru_maxrss` (the largest resident set of it or of a child it waited for, which a sample
misses when the command ends before one) goes to the file `VRAMSCOPE_RUN_REPORT` names,
with the exit status and the signal that ended it, or the reason the command could not
start. Where `VRAMSCOPE_RUN_LOG` names a file, the command's stderr goes through a pipe:
each chunk is written on to the holder's own stderr (the terminal, as before) and the
first `LOG_CAP` bytes to that file, which vramscope reads once the run ends (llama.cpp's
own buffer lines). When the command stops (Ctrl-Z, SIGSTOP) in a terminal, the holder
hands the terminal back and stops vramscope's own job, as a shell sees a stopped job;
once the shell continues vramscope, the command is continued in the foreground again.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from core.probes.proc_status import read_state, read_status
from hip_backend.external import (
    CGROUP_ENV,
    LOG_CAP,
    LOG_ENV,
    REPORT_ENV,
    START_FAILED,
    TERMINAL_ENV,
    USER_PYTHONPATH_ENV,
)
from hip_backend.external.tree import join_cgroup, kill_own_tree
from hip_backend.parent_watch import watch_parent

JOB_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
"""The terminal's signals: the command's, never the holder's."""
STOP_WAIT_S = 2.0
"""How long the holder waits for vramscope's job to stop once it asked it to."""
_ENDING = threading.Lock()
"""Held while the run is killed after vramscope is gone: the command's end (it is
among the killed) must not let this process exit before the cgroup is removed."""


def _vramscope_gone() -> None:
    with _ENDING:
        kill_own_tree()


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
    for key in (REPORT_ENV, USER_PYTHONPATH_ENV, CGROUP_ENV, TERMINAL_ENV, LOG_ENV):
        env.pop(key, None)
    user = os.environ.get(USER_PYTHONPATH_ENV)
    if user is None:
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = user
    return env


def _terminal() -> int | None:
    """The controlling terminal's descriptor when the command is to own it."""
    if not os.environ.get(TERMINAL_ENV):
        return None
    try:
        return os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None


def _inherited() -> dict[signal.Signals, Any]:
    """The dispositions vramscope handed over (Python's own Ctrl-C handler stands for
    the default it replaced)."""
    out: dict[signal.Signals, Any] = {}
    for sig in JOB_SIGNALS:
        handler = signal.getsignal(sig)
        out[sig] = signal.SIG_DFL if handler is signal.default_int_handler else handler
    return out


def _foreground(terminal: int | None, pgrp: int) -> None:
    """Give the terminal's foreground to `pgrp` (SIGTTOU is ignored here)."""
    if terminal is not None:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(terminal, pgrp)


def _in_own_group(
    terminal: int | None, dispositions: dict[signal.Signals, Any]
) -> Callable[[], None]:
    """What the command's process does between fork and exec: its own group, the
    terminal's foreground, the signal dispositions vramscope had."""

    def setup() -> None:
        os.setpgid(0, 0)
        _foreground(terminal, os.getpgrp())
        for sig, handler in dispositions.items():
            signal.signal(
                sig, handler if handler in (signal.SIG_DFL, signal.SIG_IGN) else signal.SIG_DFL
            )

    return setup


TEE_END_WAIT_S = 2.0
"""How long the holder waits, once the command has ended, for the rest of its stderr (a
process it left behind may hold the pipe open: it is killed with the run)."""


def _tee(source: int, path: str) -> threading.Thread:
    """Copy `source` (the command's stderr) to this process's stderr, and its first
    `LOG_CAP` bytes to `path`, until its end (a thread)."""

    def copy() -> None:
        kept = 0
        try:
            out = open(path, "wb")  # noqa: SIM115 - closed below, the thread's whole life
        except OSError:
            out = None
        try:
            while chunk := os.read(source, 65536):
                with contextlib.suppress(OSError):
                    os.write(2, chunk)  # a closed terminal loses the copy, not the log
                if out is not None and kept < LOG_CAP:
                    with contextlib.suppress(OSError):
                        out.write(chunk[: LOG_CAP - kept])
                    kept += len(chunk)
        except OSError:
            pass
        finally:
            if out is not None:
                with contextlib.suppress(OSError):
                    out.close()
            os.close(source)

    thread = threading.Thread(target=copy, name="stderr-tee", daemon=True)
    thread.start()
    return thread


def _vramscope_stopped(pid: int) -> bool:
    return read_state(pid) in ("T", "t")


def _stop_job(command_pgrp: int, terminal: int) -> None:
    """The command stopped in the terminal: stop vramscope's job as a shell expects it
    (the terminal given back first), wait for the shell to continue it, then continue
    the command in the foreground."""
    parent = os.getppid()
    try:
        job = os.getpgid(parent)
    except OSError:
        return
    _foreground(terminal, job)
    with contextlib.suppress(OSError):
        os.killpg(job, signal.SIGTSTP)
    deadline = time.monotonic() + STOP_WAIT_S
    while not _vramscope_stopped(parent) and time.monotonic() < deadline:
        time.sleep(0.01)
    while _vramscope_stopped(parent):  # until the shell's `fg` or `bg`
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        if os.tcgetpgrp(terminal) == job:  # `fg`: the command has the terminal again
            os.tcsetpgrp(terminal, command_pgrp)
    with contextlib.suppress(OSError):
        os.killpg(command_pgrp, signal.SIGCONT)


def _wait(pid: int, terminal: int | None) -> tuple[int, int]:
    """Wait for the command to end; its wait status and its own ru_maxrss (KiB)."""
    while True:
        _, status, usage = os.wait4(pid, os.WUNTRACED)
        if os.WIFSTOPPED(status):
            if terminal is not None:
                _stop_job(pid, terminal)
            continue  # vramscope says it was stopped: it sees the state in its samples
        return status, int(usage.ru_maxrss)


def main(argv: list[str]) -> int:
    """Run `argv` in a process group of its own; its exit status."""
    join_cgroup()
    dispositions = _inherited()
    for sig in JOB_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    terminal = _terminal()
    log_path = os.environ.get(LOG_ENV)
    try:
        # preexec_fn: no other thread runs yet (the parent watch and the tee start after)
        command = subprocess.Popen(
            argv,
            env=_command_env(),
            preexec_fn=_in_own_group(terminal, dispositions),
            stderr=subprocess.PIPE if log_path else None,
        )
    except (OSError, subprocess.SubprocessError) as exc:  # the latter: the setup before exec
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        _report({"error": f"cannot run {argv[0]!r}: {why}"})
        return START_FAILED
    with contextlib.suppress(OSError):
        os.setpgid(command.pid, command.pid)  # both sides, as a shell does: no race
    _foreground(terminal, command.pid)
    tee = None
    if log_path and command.stderr is not None:
        tee = _tee(os.dup(command.stderr.fileno()), log_path)
        command.stderr.close()
    watch_parent(cleanup=_vramscope_gone)
    status, maxrss_kib = _wait(command.pid, terminal)
    if tee is not None:
        tee.join(TEE_END_WAIT_S)
    with _ENDING:  # vramscope's end being cleaned up: wait for it (then exit 137)
        pass
    command.returncode = os.waitstatus_to_exitcode(status)
    with contextlib.suppress(OSError):
        _foreground(terminal, os.getpgid(os.getppid()))  # the terminal back to vramscope
    # A child's ru_maxrss starts from this process's own pages, shared or copied at the
    # fork and counted until the exec: only a figure above them is the command's own.
    # This process's high-water mark is read now, not before the command was started:
    # starting it (`subprocess`) grows this process too.
    maxrss = maxrss_kib * 1024
    own_peak = _own_hwm()
    code = command.returncode
    _report(
        {
            "maxrss_bytes": maxrss if maxrss > own_peak else None,
            "signal": -code if code < 0 else None,
        }
    )
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
