"""The real `vramscope explore` in a real pty: SIGTERM, SIGHUP, Ctrl-C and a closed terminal
each end it (nothing of its group left), and (where the terminal is still there to read)
it is left as it was found: alternate screen off, mouse reporting off, cursor shown.

Each test waits for the end, then checks it: the limits only stop a broken run from
hanging the suite (an idle machine ends it in well under 0.5 s, a loaded one took
longer and failed a 0.5 s window)."""

from __future__ import annotations

import errno
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui.commands.test_cli_measure import ROOT

pytestmark = pytest.mark.slow

ALT_SCREEN_ON = b"\x1b[?1049h"
RESTORED = (b"\x1b[?1049l", b"\x1b[?1000l", b"\x1b[?25h")
"""Alternate screen off, mouse reporting off, cursor shown."""
HANG_GUARD_S = 60.0
FIRST_FRAME = b"Available"
BODY = b"Max tokens"
"""A control's label: the body is in, and the reads it starts are under way."""


class Explorer:
    """`vramscope explore` on the slave side of a pty; the test holds the master."""

    def __init__(self, tmp_path: Path) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {
            **os.environ,
            "TERM": "xterm-256color",
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "HF_HOME": str(tmp_path / "hf"),
            "HF_HUB_OFFLINE": "1",
        }
        env.pop("TMUX", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui", "explore"],
            cwd=ROOT,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env=env,
        )
        os.close(slave)
        self.output = b""

    def read(self, until: bytes, timeout: float = 60.0) -> None:
        """Read the screen until `until` has been written (or the pty closed)."""
        end = time.monotonic() + timeout
        while until not in self.output and time.monotonic() < end:
            if not self._read_some(0.1):
                break
        assert until in self.output, f"never saw {until!r}: {self.output[-400:]!r}"

    def _read_some(self, wait: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError as exc:  # EIO: every slave descriptor is closed
            assert exc.errno == errno.EIO
            return False
        self.output += data
        return bool(data)

    def ended_within(self, seconds: float) -> int | None:
        """The exit status if the process ended within `seconds` (reading what it wrote
        meanwhile, so it never blocks on a full pty), else None."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            code = self.process.poll()
            if code is not None:
                while self._read_some(0.05):  # the rest of what it wrote
                    if not select.select([self.master], [], [], 0)[0]:
                        break
                return code
            self._read_some(0.01)
        return self.process.poll()

    def after_start(self) -> bytes:
        """What was written since the explorer entered the alternate screen."""
        return self.output[self.output.index(ALT_SCREEN_ON) :]

    def close(self) -> None:
        with_group = self.process.poll() is None
        if with_group:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        if self.master >= 0:
            os.close(self.master)
            self.master = -1


@pytest.fixture
def explorer(tmp_path: Path) -> Iterator[Explorer]:
    running = Explorer(tmp_path)
    try:
        running.read(FIRST_FRAME)
        running.read(BODY)
        yield running
    finally:
        running.close()


def live_members(pgid: int) -> list[int]:
    """The group's processes that still run: a zombie has ended and only waits for its
    parent (here, under load, the container's init) to reap it."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone while listed
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def group_is_gone(pgid: int, within_s: float = HANG_GUARD_S) -> bool:
    """No process of the group still runs, once the last has ended (False only when one
    still runs `within_s` after the explorer's end)."""
    deadline = time.monotonic() + within_s
    while live_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize(
    ("sig", "status"),
    [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGHUP, -signal.SIGHUP)],
    ids=["SIGTERM", "SIGHUP"],
)
def test_a_signal_restores_the_terminal_and_ends_the_explorer_at_once(
    explorer: Explorer, sig: int, status: int
) -> None:
    """Ended by the signal itself, the terminal restored first (a shell's 143, 129)."""
    os.kill(explorer.process.pid, sig)
    assert explorer.ended_within(HANG_GUARD_S) == status
    written = explorer.after_start()
    for sequence in RESTORED:
        assert sequence in written, sequence
    assert written.rindex(b"\x1b[?1049l") > written.rindex(ALT_SCREEN_ON)
    assert group_is_gone(explorer.process.pid)


def test_ctrl_c_quits_the_explorer_and_restores_the_terminal(explorer: Explorer) -> None:
    os.write(explorer.master, b"\x03")
    assert explorer.ended_within(HANG_GUARD_S) == 0
    written = explorer.after_start()
    assert b"Press q to quit" not in written
    for sequence in RESTORED:
        assert sequence in written, sequence
    assert group_is_gone(explorer.process.pid)


def test_a_closed_terminal_ends_the_explorer(explorer: Explorer) -> None:
    """The pty master closed (the terminal window gone, `tmux kill-server`): reads of the
    explorer's terminal fail with EIO, and it ends instead of spinning."""
    os.close(explorer.master)
    explorer.master = -1
    assert explorer.process.wait(HANG_GUARD_S) is not None
    assert group_is_gone(explorer.process.pid)
