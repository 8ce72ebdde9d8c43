"""Ending the explorer's process at once, with the children it started, and the stop
signals handled that way before Textual has touched the terminal.

A stop signal ends the explorer *by that signal*, as well-behaved Unix programs do:
the terminal restored and the children killed, the signal's default disposition is
set back and the signal raised again (`end_now` with 128 + the signal). So whenever
SIGTERM comes, from the interpreter's start-up (before Python has installed any
handler, when the default kills it) to the app's last frame, the status is the same,
"killed by SIGTERM": what `waitpid` reads as signal 15 and a shell reports as `$?` =
143 (129 for SIGHUP). An exit(143) instead would differ, to `waitpid`, from the
interpreter killed before its handlers are in.

Kept apart from `tui/terminal_driver.py` (which imports Textual): `vramscope explore`
installs `exit_on_stop_signals` before importing Textual (a quarter of a second and
more), so a SIGTERM or SIGHUP in that time ends it like any later one, and
the terminal driver takes the signals over as it starts.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import suppress
from types import FrameType
from typing import NoReturn

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def children() -> list[int]:
    """This process's children (Linux: /proc/self/task/*/children; elsewhere none)."""
    found: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children", encoding="ascii") as fh:
                found.extend(int(p) for p in fh.read().split())
        except (OSError, ValueError):
            continue
    return found


def end_now(code: int) -> NoReturn:
    """End the process at once, with the children it started (a probe in a child
    interpreter, a measurement's child and its group), so none outlives the explorer.
    A `code` of 128 + a stop signal ends it by that signal (`default_on`, called by the
    signal's handler, has set its default back: only the main thread may), else with
    `code`: a closed terminal seen by a thread, with no SIGHUP, exits 129."""
    for pid in children():
        with suppress(OSError):
            if os.getpgid(pid) == pid:  # leads its own group: take the group
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
    signum = code - 128
    if signum in STOP_SIGNALS:
        if threading.current_thread() is threading.main_thread():
            default_on(signum)
        if signal.getsignal(signum) == signal.SIG_DFL:
            with suppress(OSError, ValueError):
                signal.pthread_sigmask(signal.SIG_UNBLOCK, (signum,))
                # Delivered before kill() returns: the default ends the process here.
                os.kill(os.getpid(), signum)
    os._exit(code)


def default_on(signum: int) -> None:
    """Set a stop signal's default disposition back (main thread only), so `end_now`
    can end the process by it from any thread, and a second one ends it at once."""
    with suppress(ValueError):  # not the main thread
        signal.signal(signum, signal.SIG_DFL)


def _end_on_signal(signum: int, frame: FrameType | None) -> None:
    default_on(signum)
    end_now(128 + signum)


def exit_on_stop_signals() -> None:
    """Until the terminal driver takes them over: SIGTERM and SIGHUP end the process
    by the signal (nothing of the terminal has been touched yet)."""
    for signum in STOP_SIGNALS:
        with suppress(ValueError):  # not the main thread
            signal.signal(signum, _end_on_signal)
