"""The explorer signalled while it starts (#41): whenever SIGTERM or SIGHUP comes, from
the first instant to past the first frame, the explorer is ended by that signal (one
status at every instant, the interpreter's start-up before any handler included:
`waitpid` reads signal 15, a shell's `$?` is 143; 129 for SIGHUP) and leaves the
terminal as it found it (every mode it turned on is turned off after it was turned on),
never a traceback (`NoMatches: No nodes match 'Controls'`) or exit 1.

Each start is a real `vramscope explore` on its own pty; a few run at once to keep
the sweep's time down. From the process's start, every 10 ms to 0.5 s, a real shell
starts it, sends the signal and reports `$?`, as a user's shell would; every 50 ms the
test signals it itself and reads `waitpid`'s status (a shell's 143 is the same for an
exit(143) and a death by SIGTERM: this one tells them apart). A loaded machine
takes from 0.2 s to over a second to reach the alternate screen, so two sweeps are
timed from what the explorer writes (seen on the pty): every 20 ms from its entering
the alternate screen to 0.5 s on, and every 50 ms for 0.3 s from the first frame (the
body's mount, where `NoMatches` came from). The two signals take turns at those
instants (SIGTERM at the first, third, ..., SIGHUP at the second, fourth, ...): both
take the one stop path (`tui/process_exit.py`'s STOP_SIGNALS, the terminal driver's
handler).

The starts timed from the screen and the frame are forked by a warmed interpreter
(tests/tui/warm_explorer.py), which has imported what `explore` imports before it
builds the app: each runs the command's entry point from the top (its handlers, the
app built and run, the body's code imported after the first frame) on its own pty in a
session of its own, and `waitpid` reads its status. A fresh interpreter spent 0.4 s of
processor time on those imports, before the instants these sweeps are about, in each
of 33 starts; the interpreter's start-up and imports are the shell sweep's, which
starts a fresh `python -m tui explore` every time.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from tests.conftest import TERMINAL_ENV
from tests.tui.commands.test_cli_measure import ROOT

pytestmark = pytest.mark.slow

MODES = (b"1049", b"1000", b"1003", b"1015", b"1006", b"2004", b"1004")
"""The alternate screen, the mouse modes, bracketed paste, focus reporting."""
AT_ONCE = 3
FIRST_FRAME = b"Available"
WARM_SCRIPT = Path(__file__).with_name("warm_explorer.py")
SHELL_STATUS = b"shell-status "
SHELL = 'after="$1"; shift; exec 3<&0; "$@" <&3 3<&- & pid=$!; sleep "$after"; \
kill -s "$SIG" "$pid"; wait "$pid"; echo "shell-status $?"'
"""Start the explorer, signal it `$1` seconds later, and say the status its shell saw
(the terminal handed on through fd 3: a background command's stdin is /dev/null
before its own redirections)."""


@dataclass(frozen=True)
class Ended:
    """One signalled start: when the signal went, the exit status, what was written.
    `code` is `Popen.returncode` (-N: ended by signal N), or a shell's `$?` when a
    shell started it (`shell`)."""

    after_s: float
    signum: int
    code: int | None
    output: bytes
    alt_at: float | None = None
    """Seconds from the start to the alternate screen (None: never entered)."""
    frame_at: float | None = None
    """Seconds from the start to the first frame (None: never shown)."""
    shell: bool = False
    anchor: str = "shell"
    """What `after_s` was timed from (`start_and_signal`'s anchor)."""
    sent: bool = True
    """The signal went (False: its anchor never came within the minute)."""


def _left_on(output: bytes) -> list[bytes]:
    """The modes turned on (`ESC[?Nh`) and not turned off (`ESC[?Nl`) after."""
    left = []
    for mode in MODES:
        on = output.rfind(b"\x1b[?" + mode + b"h")
        if on >= 0 and output.rfind(b"\x1b[?" + mode + b"l") < on:
            left.append(mode)
    return left


def explorer_env(home: Path) -> dict[str, str]:
    """The environment of a start whose home is `home`."""
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
    return env


class Started(Protocol):
    """A started explorer: a `Popen`, or a `Forked` start of the warmed interpreter."""

    @property
    def pid(self) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class WarmExplorer:
    """tests/tui/warm_explorer.py, running: it has imported what `explore` imports before
    it builds the app, and forks a start of the command for each `start`."""

    def __init__(self, home: Path) -> None:
        requests_read, self._requests = os.pipe()
        self._events, events_write = os.pipe()
        master, slave = os.openpty()  # its own terminal, as a start's interpreter has
        # Made before any test's own home (a module fixture): without the terminal size
        # xdist's workers export (tests/conftest.py drops it for each test, and so for
        # each start's environment).
        warm_env = {k: v for k, v in explorer_env(home).items() if k not in TERMINAL_ENV}
        self._process = subprocess.Popen(
            [sys.executable, str(WARM_SCRIPT), str(requests_read), str(events_write)],
            cwd=ROOT,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env=warm_env,
            pass_fds=(requests_read, events_write),
        )
        for fd in (requests_read, events_write, slave):
            os.close(fd)
        self._master = master
        self.said = b""
        """What the warmed interpreter wrote itself (nothing, unless it failed)."""
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._pids: dict[int, int] = {}
        self._codes: dict[int, int] = {}
        self._next = 0
        self._gone = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        pending = b""
        watched = [self._events, self._master]
        while True:
            ready, _, _ = select.select(watched, [], [])
            if self._master in ready:
                try:
                    said = os.read(self._master, 65536)
                except OSError:  # EIO: it has ended
                    said = b""
                self.said += said
                if not said:
                    watched.remove(self._master)
            if self._events not in ready:
                continue
            data = os.read(self._events, 65536)
            if not data:
                with self._changed:
                    self._gone = True
                    self._changed.notify_all()
                return
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                what, ident, number = line.decode().split()
                with self._changed:
                    into = self._pids if what == "started" else self._codes
                    into[int(ident)] = int(number)
                    self._changed.notify_all()

    def start(self, tty: str, env: dict[str, str]) -> Forked:
        """Fork a start on the terminal `tty` with `env`; back once it holds the terminal."""
        with self._lock:
            ident, self._next = self._next, self._next + 1
            request = {"id": ident, "tty": tty, "cwd": str(ROOT), "env": env}
            os.write(self._requests, json.dumps(request).encode() + b"\n")
        if not self._wait_for(self._pids, ident, 60):
            raise RuntimeError(f"the warmed interpreter started nothing: {self.said[-2000:]!r}")
        return Forked(self, ident, self._pids[ident])

    def _wait_for(self, into: dict[int, int], ident: int, timeout: float | None) -> bool:
        with self._changed:
            self._changed.wait_for(lambda: ident in into or self._gone, timeout)
            return ident in into

    def wait_ended(self, ident: int, timeout: float | None) -> bool:
        """Whether the start `ident` has ended, waiting up to `timeout` for it."""
        return self._wait_for(self._codes, ident, timeout)

    def code(self, ident: int) -> int | None:
        with self._changed:
            return self._codes.get(ident)

    def close(self) -> None:
        os.close(self._requests)
        self._process.wait(30)
        self._reader.join(30)
        os.close(self._events)
        os.close(self._master)


@dataclass(frozen=True)
class Forked:
    """A start forked by the warmed interpreter, which reads its status (`waitpid`)."""

    warm: WarmExplorer
    ident: int
    pid: int

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # as Popen: never a pid the warmed one has reaped
            os.kill(self.pid, sig)

    def poll(self) -> int | None:
        return self.warm.code(self.ident)

    def wait(self, timeout: float | None = None) -> int:
        if not self.warm.wait_ended(self.ident, timeout):
            raise subprocess.TimeoutExpired(f"explorer {self.pid}", timeout or 0.0)
        code = self.warm.code(self.ident)
        assert code is not None
        return code


DRAIN_S = 1.0
"""After a start has ended, how long to wait for more of its output before taking what
came as all of it: a limit against a terminal nobody closes, not a timing."""


def drained(master: int) -> bytes:
    """What is still to come from the terminal of a start that has ended, up to its
    close (EIO: every slave descriptor is closed) or DRAIN_S of silence."""
    out = b""
    while select.select([master], [], [], DRAIN_S)[0]:
        try:
            data = os.read(master, 65536)
        except OSError as exc:
            assert exc.errno == errno.EIO
            break
        if not data:
            break
        out += data
    return out


def start_and_signal(
    tmp_path: Path, after_s: float, signum: int, anchor: str, warm: WarmExplorer | None = None
) -> Ended:
    """Start the explorer, signal it `after_s` after `anchor` ("shell": a shell starts
    it and signals it, "start", "alt": it entered the alternate screen, "frame": its
    first frame), and read what it writes until it ends. With `warm`, a start not
    through a shell is forked by the warmed interpreter (`WarmExplorer`)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = explorer_env(tmp_path / f"{signum}-{int(after_s * 1000)}-{anchor}")
    explorer = [sys.executable, "-m", "tui", "explore"]
    shell = anchor == "shell"
    process: Started
    if shell:
        env["SIG"] = signal.Signals(signum).name.removeprefix("SIG")
        explorer = ["sh", "-c", SHELL, "sh", f"{after_s:.3f}", *explorer]
    if warm is not None and not shell:
        process = warm.start(os.ttyname(slave), env)
    else:
        process = subprocess.Popen(
            explorer,
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
            zero = {"shell": None, "start": 0.0, "alt": alt_at, "frame": frame_at}[anchor]
            due = None if zero is None else started + zero + after_s
            if shell:
                sent = True  # the shell sends it
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
                # Ended; but a pty hands the last writes on to its master later (the
                # kernel's flip buffer): under load a shell's status line came after
                # the shell had exited, and was lost. Read on until the terminal says
                # it is closed, or nothing more comes.
                output += drained(master)
                break
        code: int | None
        try:
            code = process.wait(10)
        except subprocess.TimeoutExpired:  # still running: a problem named below, not a crash
            code = None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        os.close(master)
    if shell:
        said = output.rsplit(SHELL_STATUS, 1)
        code = int(said[1].split()[0]) if len(said) == 2 else None
        output = said[0]
    return Ended(after_s, signum, code, output, alt_at, frame_at, shell, anchor, sent)


def _sweep(tmp_path: Path, starts: list[tuple[float, int, str]], warm: WarmExplorer) -> list[Ended]:
    with ThreadPoolExecutor(AT_ONCE) as pool:
        return list(pool.map(lambda s: start_and_signal(tmp_path, s[0], s[1], s[2], warm), starts))


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmExplorer]:
    """One warmed interpreter for the module's sweeps (each test's starts are its own)."""
    warmed = WarmExplorer(tmp_path_factory.mktemp("warm-home"))
    try:
        yield warmed
    finally:
        warmed.close()


def _problems(ended: list[Ended]) -> list[str]:
    out = []
    for e in ended:
        # Ended by the signal at every instant: a shell shows 128 + the signal.
        wanted = 128 + e.signum if e.shell else -e.signum
        left = _left_on(e.output)
        if e.code != wanted or left or b"Traceback" in e.output or b"NoMatches" in e.output:
            when = f"{e.after_s:.2f} s after {e.anchor}" + ("" if e.sent else " (never sent)")
            said = (
                f"{when}: exit {e.code}, left on {left}, alternate screen at {e.alt_at}, "
                f"first frame at {e.frame_at}"
            )
            out.append(f"{said}: {e.output[-300:]!r}")
    return out


ALT_STEP_MS = 20
FRAME_STEP_MS = 50
TURNS = {signal.SIGTERM: 0, signal.SIGHUP: 1}
"""Which of the instants timed from the alternate screen and the first frame a signal
takes: SIGTERM the even steps, SIGHUP the odd ones, so that the two sweeps together
signal every ALT_STEP_MS and FRAME_STEP_MS."""


def _starts(signum: int, step_ms: int) -> list[tuple[float, int, str]]:
    """The issue's sweep (through a shell, every `step_ms` from 0 to 0.5 s), then the
    signal's turns (`TURNS`) of the instants timed from the alternate screen's first
    byte (every ALT_STEP_MS to 0.5 s) and from the first frame (every FRAME_STEP_MS up
    to 0.3 s), where the terminal is in use. Each start costs a whole interpreter and
    Textual: 0.4-1.2 s of processor time, the most for those timed from the screen."""
    turn = TURNS[signal.Signals(signum)]
    by_shell = [(n / 1000, signum, "shell") for n in range(0, 501, step_ms)]
    alt_ms = range(turn * ALT_STEP_MS, 501, 2 * ALT_STEP_MS)
    frame_ms = range(turn * FRAME_STEP_MS, 301, 2 * FRAME_STEP_MS)
    from_alt = [(n / 1000, signum, "alt") for n in alt_ms]
    from_frame = [(n / 1000, signum, "frame") for n in frame_ms]
    return by_shell + from_alt + from_frame


def test_the_two_signals_take_every_instant_from_the_screen_and_the_frame() -> None:
    # The turns leave no instant out: together every ALT_STEP_MS from 0 to 0.5 s and
    # every FRAME_STEP_MS from 0 to 0.3 s.
    both = _starts(signal.SIGTERM, 10) + _starts(signal.SIGHUP, 50)
    alt = sorted(round(after * 1000) for after, _, anchor in both if anchor == "alt")
    frame = sorted(round(after * 1000) for after, _, anchor in both if anchor == "frame")
    assert alt == list(range(0, 501, ALT_STEP_MS))
    assert frame == list(range(0, 301, FRAME_STEP_MS))


def test_sigterm_at_every_10_ms_of_the_start_ends_143_with_the_terminal_restored(
    tmp_path: Path, warm: WarmExplorer
) -> None:
    starts = _starts(signal.SIGTERM, 10)
    ended = _sweep(tmp_path, starts, warm)
    assert _problems(ended) == []
    # The sweep crossed the first frame, not only the start.
    assert sum(e.frame_at is not None for e in ended) >= sum(s[2] == "frame" for s in starts)


def test_sighup_during_the_start_ends_129_with_the_terminal_restored(
    tmp_path: Path, warm: WarmExplorer
) -> None:
    assert _problems(_sweep(tmp_path, _starts(signal.SIGHUP, 50), warm)) == []
