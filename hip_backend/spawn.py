"""Starting a measuring process from this checkout, and stopping it with everything it
started: the one way hip_backend spawns (`python -m hip_backend.child`, `mlx.launch`
and its ranks, the single run a split is compared with).

Every process is started in a new session, in the project's root, with text streams
in UTF-8 (undecodable bytes replaced), so that it leads its own process group and
the group is what gets killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from hip_backend.parent_watch import PARENT_ENV, parent_token

PROJECT_ROOT = Path(__file__).resolve().parents[1]
"""The checkout whose core and hip_backend a child imports, installed or not."""

# glibc keeps freed blocks below its (adaptive) mmap threshold in the heap, so the
# resident set would remember transients long after they died. A small fixed
# threshold hands every tensor-sized block back to the kernel when it is freed,
# which makes the CPU peak (RSS) track live memory. Harmless for GPU runs.
CHILD_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "16384", "MALLOC_TRIM_THRESHOLD_": "65536"}
# OpenMP threads that spin while waiting stall each other when the machine is busy:
# a CPU decode of a tiny model ran at 3.4 tokens/s with spinning, 96 with passive
# waits, on this project's 2 shared cores under load. Memory is not affected.
CHILD_THREAD_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}

GROUP_GONE_S = 5.0
"""How long `kill_group` waits for the group's processes to be gone."""

Stream = int | IO[Any] | None


def child_env(
    *,
    defaults: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
    import_path: bool = True,
) -> dict[str, str]:
    """This process's environment for a child: `defaults` where unset, `overrides`
    always, and (with `import_path`) the project root first on PYTHONPATH."""
    env = dict(os.environ)
    for key, value in (defaults or {}).items():
        env.setdefault(key, value)
    env.update(overrides or {})
    env[PARENT_ENV] = parent_token()  # the child dies with this process (parent_watch)
    if import_path:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p
        )
    return env


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    stdin: Stream = subprocess.DEVNULL,
    stdout: Stream = subprocess.DEVNULL,
    stderr: Stream = subprocess.PIPE,
    cwd: Path = PROJECT_ROOT,
    session: bool = True,
) -> subprocess.Popen[str]:
    """Start `argv` as the leader of a new process group (raises OSError), in the
    project's root unless `cwd` says where (the user's command runs where they are):
    in a new session (no terminal) unless `session` is False (then in this process's
    session, so that it can hand the terminal on: `vramscope run`'s holder)."""
    return subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=dict(env),
        cwd=str(cwd),
        start_new_session=session,
        process_group=None if session else 0,
    )


def signal_group(pgid: int) -> None:
    """SIGKILL every process of the group (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_group(pgid: int | None) -> None:
    """SIGKILL every process of the group and wait (at most GROUP_GONE_S) until none is
    left alive: a leader's children (mlx.launch's ranks) are not reaped by its `wait()`,
    and a killed process lingers a few milliseconds after the signal is sent."""
    if pgid is None:
        return
    signal_group(pgid)
    deadline = time.monotonic() + GROUP_GONE_S
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def group_alive(pgid: int) -> bool:
    """Whether a process of the group is still alive (zombies, which hold no memory and
    run nothing, do not count where /proc tells them apart)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _ppid, group = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(group) == pgid and state != "Z":
            return True
    return False


def thread_failure(exc: RuntimeError) -> str:
    """What a thread that could not start means (Python says "can't start new thread"
    when there is no memory for its stack: `ulimit -v`, a full cgroup)."""
    return f"cannot start a thread to follow the run ({exc}): no memory for its stack"
