"""`vramscope run -- CMD`: the user's command, started, sampled until it ends.

The command runs under `python -m hip_backend.external.child` (the holder, in a process
group of its own, dying with vramscope: `hip_backend.parent_watch`), where the user
is. With a terminal whose foreground vramscope holds, the holder stays in vramscope's
session and the command gets the terminal's foreground (`child`); the explorer's runs
(`quiet`) have no terminal: a session of their own, stdin, stdout and stderr
/dev/null. Every process the command starts, `setsid` and double forks included, is
followed (`tree`: the run's cgroup v2 where one can be made, its token in the
environment always) and sampled every `interval_s` seconds until the command ends;
then what it left behind is killed. `stop()` (Ctrl-C or SIGTERM to vramscope, Esc in
the explorer) kills every process of it and the run ends as cancelled.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.errors import UsageError
from hip_backend.external import (
    LOG_CAP,
    LOG_ENV,
    REPORT_ENV,
    START_FAILED,
    TERMINAL_ENV,
    USER_PYTHONPATH_ENV,
)
from hip_backend.external.sampler import TreePeaks, TreeSampler
from hip_backend.external.tree import RunTree
from hip_backend.spawn import child_env, spawn

REPORT_CAP = 4096


@dataclass(frozen=True)
class CommandRun:
    """How the command ended and what was sampled of it."""

    exit_status: int
    """The command's status as a shell gives it: its exit code, 128 + N for signal N."""
    peaks: TreePeaks
    wall_seconds: float
    interval_s: float
    maxrss_bytes: int | None
    """The command's own `ru_maxrss` (`wait4`), when above the holder's pages it
    started from; None when it was not."""
    error: str | None = None
    """Why the command could not start (the run is then vramscope's error)."""
    signal: int | None = None
    """The signal that ended the command, when one did."""
    followed_by: str = ""
    """How its processes were found (a cgroup v2, or the environment marker)."""
    cgroup_peak_bytes: int | None = None
    """The run's cgroup `memory.peak`, where the memory controller gave one."""
    stopped: bool = False
    """True when `stop()` ended it (Ctrl-C or SIGTERM to vramscope, Esc)."""
    stderr_text: str | None = None
    """The first `LOG_CAP` bytes of the command's stderr, as text, when it was kept
    (`keep_stderr`: a llama.cpp command's own log); None when it was not."""

    @property
    def host_peak_bytes(self) -> int:
        """The tree's host figure: the largest sum of VmHWM at a sample, or the command's
        own ru_maxrss when that is larger (a process that ended between two samples)."""
        return max(self.peaks.host_hwm, self.maxrss_bytes or 0)

    @property
    def measured(self) -> bool:
        """False when nothing was read of it: no sample and no ru_maxrss of its own (a
        command shorter than one interval, as small as the holder's pages)."""
        return self.peaks.samples > 0 or self.maxrss_bytes is not None


def check_command(argv: Sequence[str]) -> None:
    """A usage error unless `argv` names a program that can be found."""
    if not argv:
        raise UsageError("CMD", "give the command to run after --")
    program = argv[0]
    if "/" not in program and shutil.which(program) is None:
        raise UsageError("CMD", f"'{program}' is not a program on PATH")


def _read_report(path: Path) -> dict[str, object]:
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(REPORT_CAP) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _own_terminal() -> int | None:
    """The controlling terminal, opened, when this process's group is its foreground
    (else the command runs as vramscope does: in the background, or with none)."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.tcgetpgrp(fd) == os.getpgrp():
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _take_back(terminal: int) -> None:
    """The terminal's foreground back to this process's group (SIGTTOU blocked in this
    thread: a background group may then set it, and this may be a worker thread)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(terminal, os.getpgrp())
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class CommandRunner:
    """One command: `start()`, then `follow()` to its end; `stop()` from any thread."""

    def __init__(
        self,
        argv: Sequence[str],
        interval_s: float = 0.25,
        *,
        quiet: bool = False,
        cgroup: bool = True,
        keep_stderr: bool = False,
    ) -> None:
        check_command(argv)
        self.argv = list(argv)
        self.interval_s = interval_s
        self.quiet = quiet
        self.tree = RunTree.new(cgroup=cgroup)
        self._scratch = tempfile.TemporaryDirectory(prefix="vramscope-run-")
        self._report = Path(self._scratch.name) / "report.json"
        self._log = Path(self._scratch.name) / "stderr.log" if keep_stderr else None
        self._terminal: int | None = None
        self._holder: subprocess.Popen[str] | None = None
        self._started = 0.0
        self._stopped = threading.Event()

    @property
    def pid(self) -> int | None:
        """The holder's process id, once started."""
        return self._holder.pid if self._holder is not None else None

    def start(self) -> None:
        """Start the holder and the command (raises OSError when the holder cannot)."""
        overrides = {REPORT_ENV: str(self._report), **self.tree.env()}
        if self._log is not None:
            overrides[LOG_ENV] = str(self._log)
        user_path = os.environ.get("PYTHONPATH")
        if user_path is not None:
            overrides[USER_PYTHONPATH_ENV] = user_path
        if not self.quiet:
            self._terminal = _own_terminal()
            if self._terminal is not None:
                overrides[TERMINAL_ENV] = "1"
        env = child_env(overrides=overrides)
        argv_holder = [sys.executable, "-m", "hip_backend.external.child", *self.argv]
        stdio = subprocess.DEVNULL if self.quiet else None
        self._started = time.monotonic()
        try:
            self._holder = spawn(
                argv_holder,
                env,
                stdin=stdio,
                stdout=stdio,
                stderr=stdio,
                cwd=Path.cwd(),
                session=self.quiet,
            )
        except BaseException:
            self._close()
            raise

    def stop(self) -> None:
        """Kill every process of the command (the holder too); `follow` then returns
        the run as stopped."""
        self._stopped.set()
        self.tree.kill(also=(self.pid,) if self.pid is not None else ())

    def follow(self, on_sample: Callable[[TreePeaks], None] | None = None) -> CommandRun:
        """Sample until the holder ends, kill what the command left, and say how it went
        (KeyboardInterrupt kills every process of it first)."""
        holder = self._holder
        assert holder is not None, "start() first"
        sampler = TreeSampler(holder.pid, tree=self.tree)
        # While the command has the terminal, what this thread says (a notice) is
        # written from a background group: with `stty tostop` SIGTTOU would stop
        # vramscope. Blocked here, the write goes through.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
        try:
            while holder.poll() is None:
                sampler.sample()
                if self._terminal is not None:
                    # A stop in the terminal is the shell's to say (the holder stops
                    # vramscope's job with it); a sample just after `fg` would say it too
                    sampler.peaks.stopped = []
                if on_sample is not None:
                    on_sample(sampler.peaks)
                with contextlib.suppress(subprocess.TimeoutExpired):  # the next sample
                    holder.wait(self.interval_s)
            wall = time.monotonic() - self._started
            self.tree.kill()  # what the command left behind (a daemon, a setsid child)
            done = _read_report(self._report)
            stderr_text = self._read_log()
            cgroup_peak, followed_by = self.tree.memory_peak(), self.tree.followed_by
        except BaseException:
            self.stop()
            holder.wait()
            raise
        finally:
            self._close()
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        maxrss, error, signum = done.get("maxrss_bytes"), done.get("error"), done.get("signal")
        status = holder.returncode
        return CommandRun(
            exit_status=status if status >= 0 else 128 - status,
            peaks=sampler.peaks,
            wall_seconds=wall,
            interval_s=self.interval_s,
            maxrss_bytes=maxrss if isinstance(maxrss, int) else None,
            error=str(error) if error is not None and status == START_FAILED else None,
            signal=signum if isinstance(signum, int) else (-status if status < 0 else None),
            followed_by=followed_by,
            cgroup_peak_bytes=cgroup_peak,
            stopped=self._stopped.is_set(),
            stderr_text=stderr_text,
        )

    def _read_log(self) -> str | None:
        """The kept stderr (None when none was kept, or the holder wrote no file)."""
        if self._log is None:
            return None
        try:
            with open(self._log, "rb") as f:
                return f.read(LOG_CAP).decode("utf-8", errors="replace")
        except OSError:
            return None

    def _close(self) -> None:
        if self._terminal is not None:
            _take_back(self._terminal)
            os.close(self._terminal)
            self._terminal = None
        self.tree.close()
        self._scratch.cleanup()


def run_command(
    argv: Sequence[str],
    interval_s: float = 0.25,
    on_sample: Callable[[TreePeaks], None] | None = None,
    *,
    quiet: bool = False,
    cgroup: bool = True,
    keep_stderr: bool = False,
) -> CommandRun:
    """Run `argv` to its end, sampling its processes every `interval_s` seconds (raises
    OSError when it cannot start; KeyboardInterrupt kills its processes first)."""
    runner = CommandRunner(argv, interval_s, quiet=quiet, cgroup=cgroup, keep_stderr=keep_stderr)
    runner.start()
    return runner.follow(on_sample)
