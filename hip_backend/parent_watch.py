"""A measuring process never outlives the vramscope that asked for it.

Every process hip_backend starts is handed `VRAMSCOPE_PARENT` (`pid:start-time` of the
asking process) through `spawn.child_env`, and the ranks get it through `mlx.launch
--env`. `watch_parent()`, called first thing by the child and by each rank, polls
that process four times a second; once it is gone (SIGTERM, SIGKILL, a crash) the
watcher runs its cleanup and SIGKILLs its own process group: the child and what it
started, or `mlx.launch` with every rank.

Not `PR_SET_PDEATHSIG`: Linux sends it when the *thread* that forked the child ends,
and the explorer starts a measurement from a worker thread that returns at once.
The start time (field 22 of `/proc/PID/stat`) tells a reused pid from the parent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

PARENT_ENV = "VRAMSCOPE_PARENT"
POLL_S = 0.25
"""How often the parent is looked for: the group is gone well within 2 s of it."""


def _stat_fields(pid: int) -> list[str] | None:
    """`/proc/PID/stat` after the command name (state first), or None without /proc."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of the line)."""
    fields = _stat_fields(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def parent_token(pid: int | None = None) -> str:
    """`pid:start-time` of this process (what a child watches)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{_start_time(pid) or ''}"


def alive(token: str) -> bool:
    """Whether the process a token names is still the one that made it."""
    pid_text, _, started = token.partition(":")
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        pass  # it exists, as another user
    fields = _stat_fields(pid)
    if started and fields is not None and len(fields) > 19:
        if fields[19] != started:
            return False  # the pid was reused
        if fields[0] == "Z":
            return False  # a zombie runs nothing: its parent has not reaped it yet
    return True


def watch_parent(cleanup: Callable[[], None] | None = None, token: str | None = None) -> bool:
    """Start the watcher thread (a daemon); False when no parent was handed over."""
    token = os.environ.get(PARENT_ENV, "") if token is None else token
    if not token:
        return False

    def watch() -> None:
        while alive(token):
            time.sleep(POLL_S)
        if cleanup is not None:
            with contextlib.suppress(Exception):
                cleanup()
        with contextlib.suppress(OSError):
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os._exit(137)  # not in a group of our own: this process at least

    threading.Thread(target=watch, name="vramscope-parent-watch", daemon=True).start()
    return True
