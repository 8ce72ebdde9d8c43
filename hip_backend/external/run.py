"""`vramscope run -- CMD`: the user's command, started, sampled until it ends.

The command runs under `python -m hip_backend.external.child` (its own process group,
dying with vramscope: `hip_backend.parent_watch`), where the user is, with their
terminal. The sampler reads its processes every `interval_s` seconds until none is
left. Ctrl-C or SIGTERM (raised as KeyboardInterrupt by the command line) kill the
whole group and wait until no process of it is left, then go on up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.errors import UsageError
from hip_backend.external import REPORT_ENV, START_FAILED, USER_PYTHONPATH_ENV
from hip_backend.external.sampler import TreePeaks, TreeSampler
from hip_backend.spawn import child_env, kill_group, spawn

REPORT_CAP = 4096


@dataclass(frozen=True)
class CommandRun:
    """How the command ended and what was sampled of it."""

    exit_status: int
    peaks: TreePeaks
    wall_seconds: float
    interval_s: float
    maxrss_bytes: int | None
    """The largest resident set of one of its processes (`ru_maxrss`), once waited for."""
    error: str | None = None
    """Why the command could not start (the run is then vramscope's error)."""

    @property
    def host_peak_bytes(self) -> int:
        """The tree's host figure: the largest sum of VmHWM at a sample, or one process's
        own peak when that is larger (a process that ended between two samples)."""
        return max(self.peaks.host_hwm, self.maxrss_bytes or 0)


def check_command(argv: Sequence[str]) -> None:
    """A usage error unless `argv` names a program that can be found."""
    if not argv:
        raise UsageError("CMD", "give the command to run after --")
    program = argv[0]
    if "/" not in program and shutil.which(program) is None:
        raise UsageError("CMD", f"'{program}' is not a program on PATH")


def stop_command(pgid: int) -> None:
    """Kill a running command's group (the holder and everything of the command); its
    `run_command` then returns as for a command killed by a signal."""
    kill_group(pgid)


def _read_report(path: Path) -> dict[str, object]:
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(REPORT_CAP) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_command(
    argv: Sequence[str],
    interval_s: float = 0.25,
    on_sample: Callable[[TreePeaks], None] | None = None,
    *,
    quiet: bool = False,
    on_start: Callable[[int], None] | None = None,
) -> CommandRun:
    """Run `argv` to its end, sampling its processes every `interval_s` seconds (raises
    OSError when it cannot start; KeyboardInterrupt kills its group first). `quiet`:
    no terminal for the command (stdin, stdout and stderr are /dev/null: the explorer's
    runs); `on_start` gets the group's id (`stop_command` ends it from another thread)."""
    check_command(argv)
    with tempfile.TemporaryDirectory(prefix="vramscope-run-") as scratch:
        report = Path(scratch) / "report.json"
        overrides = {REPORT_ENV: str(report)}
        user_path = os.environ.get("PYTHONPATH")
        if user_path is not None:
            overrides[USER_PYTHONPATH_ENV] = user_path
        env = child_env(overrides=overrides)
        argv_holder = [sys.executable, "-m", "hip_backend.external.child", *argv]
        started = time.monotonic()
        stdio = subprocess.DEVNULL if quiet else None
        holder = spawn(argv_holder, env, stdin=stdio, stdout=stdio, stderr=stdio, cwd=Path.cwd())
        if on_start is not None:
            on_start(holder.pid)
        sampler = TreeSampler(holder.pid)
        try:
            while holder.poll() is None:
                sampler.sample()
                if on_sample is not None:
                    on_sample(sampler.peaks)
                with contextlib.suppress(subprocess.TimeoutExpired):  # the next sample
                    holder.wait(interval_s)
        except BaseException:
            kill_group(holder.pid)
            holder.wait()
            raise
        wall = time.monotonic() - started
        kill_group(holder.pid)  # what the command left behind in its group goes too
        done = _read_report(report)
    maxrss = done.get("maxrss_bytes")
    error = done.get("error")
    status = holder.returncode
    return CommandRun(
        exit_status=status if status >= 0 else 128 - status,
        peaks=sampler.peaks,
        wall_seconds=wall,
        interval_s=interval_s,
        maxrss_bytes=maxrss if isinstance(maxrss, int) else None,
        error=str(error) if error is not None and status == START_FAILED else None,
    )
