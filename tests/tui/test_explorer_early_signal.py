"""The explorer signalled while it starts (#41): whenever SIGTERM or SIGHUP comes, from
the first instant to past the first frame, the explorer ends with 128 + the signal and
leaves the terminal as it found it (every mode it turned on is turned off after it was
turned on), never a traceback (`NoMatches: No nodes match 'Controls'`) or exit 1.

Each start is a real `vramscope explore` on its own pty; a few run at once to keep
the sweep's time down. A loaded machine takes from 0.2 s to over a second to reach
the alternate screen, so the sweep that matters is timed from the moment the explorer
enters it (seen on the pty): every 10 ms from then to 0.5 s on, and every 20 ms for
0.3 s from the first frame (the body's mount, where `NoMatches` came from); a coarser
one from the process's start covers the interpreter's start and Textual's import.
"""

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tui.commands.test_cli_measure import ROOT

pytestmark = pytest.mark.slow

MODES = (b"1049", b"1000", b"1003", b"1015", b"1006", b"2004", b"1004")
"""The alternate screen, the mouse modes, bracketed paste, focus reporting."""
AT_ONCE = 3
FIRST_FRAME = b"Available"


@dataclass(frozen=True)
class Ended:
    """One signalled start: when the signal went, the exit status, what was written."""

    after_s: float
    signum: int
    code: int | None
    output: bytes
    alt_at: float | None = None
    """Seconds from the start to the alternate screen (None: never entered)."""
    frame_at: float | None = None
    """Seconds from the start to the first frame (None: never shown)."""


def _left_on(output: bytes) -> list[bytes]:
    """The modes turned on (`ESC[?Nh`) and not turned off (`ESC[?Nl`) after."""
    left = []
    for mode in MODES:
        on = output.rfind(b"\x1b[?" + mode + b"h")
        if on >= 0 and output.rfind(b"\x1b[?" + mode + b"l") < on:
            left.append(mode)
    return left


def start_and_signal(tmp_path: Path, after_s: float, signum: int, anchor: str) -> Ended:
    """Start the explorer, signal it `after_s` after `anchor` ("start", "alt": it
    entered the alternate screen, "frame": its first frame), and read what it writes
    until it ends."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    home = tmp_path / f"{signum}-{int(after_s * 1000)}-{anchor}"
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "HF_HOME": str(home / "hf"),
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("TMUX", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tui", "explore"],
        cwd=ROOT,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        env=env,
    )
    os.close(slave)
    output = b""
    started = time.monotonic()
    sent = False
    alt_at = frame_at = None
    try:
        end = started + 60
        while time.monotonic() < end:
            zero = {"start": 0.0, "alt": alt_at, "frame": frame_at}[anchor]
            due = None if zero is None else started + zero + after_s
            if not sent and due is not None and time.monotonic() >= due:
                process.send_signal(signum)
                sent = True
            if sent and process.poll() is not None:
                wait = 0.0
            elif due is not None and not sent:
                wait = max(0.0, min(0.005, due - time.monotonic()))
            else:
                wait = 0.005 if not sent else 0.02
            ready, _, _ = select.select([master], [], [], wait)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError as exc:  # EIO: every slave descriptor is closed
                    assert exc.errno == errno.EIO
                    data = b""
                output += data
                if alt_at is None and b"\x1b[?1049h" in output:
                    alt_at = time.monotonic() - started
                if frame_at is None and FIRST_FRAME in output:
                    frame_at = time.monotonic() - started
                if not data:
                    break
            elif sent and process.poll() is not None:
                break
        code = process.wait(10)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        os.close(master)
    return Ended(after_s, signum, code, output, alt_at, frame_at)


def _sweep(tmp_path: Path, starts: list[tuple[float, int, str]]) -> list[Ended]:
    with ThreadPoolExecutor(AT_ONCE) as pool:
        return list(pool.map(lambda s: start_and_signal(tmp_path, *s), starts))


def _problems(ended: list[Ended]) -> list[str]:
    out = []
    for e in ended:
        # Before vramscope's own code runs, the interpreter dies of the signal itself
        # (a shell shows that as 128 + the signal too) and has touched nothing.
        wanted = (128 + e.signum, -e.signum)
        left = _left_on(e.output)
        if e.code not in wanted or left or b"Traceback" in e.output or b"NoMatches" in e.output:
            out.append(f"at {e.after_s:.2f} s: exit {e.code}, left on {left}: {e.output[-300:]!r}")
    return out


def _starts(signum: int, step_ms: int) -> list[tuple[float, int, str]]:
    from_start = [(n / 1000, signum, "start") for n in range(0, 501, 50)]
    from_alt = [(n / 1000, signum, "alt") for n in range(0, 501, step_ms)]
    from_frame = [(n / 1000, signum, "frame") for n in range(0, 301, 2 * step_ms)]
    return from_start + from_alt + from_frame


def test_sigterm_at_every_10_ms_of_the_start_ends_143_with_the_terminal_restored(
    tmp_path: Path,
) -> None:
    ended = _sweep(tmp_path, _starts(signal.SIGTERM, 10))
    assert _problems(ended) == []
    # The sweep crossed the first frame, not only the start.
    assert sum(e.frame_at is not None for e in ended) >= 16


def test_sighup_during_the_start_ends_129_with_the_terminal_restored(tmp_path: Path) -> None:
    assert _problems(_sweep(tmp_path, _starts(signal.SIGHUP, 30))) == []
