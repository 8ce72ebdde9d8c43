"""Ending the explorer's process at once, with the children it started, and the stop
signals handled that way before Textual has touched the terminal.

Kept apart from `tui/terminal_driver.py` (which imports Textual): `vramscope explore`
installs `exit_on_stop_signals` before importing Textual (a quarter of a second and
more), so a SIGTERM or SIGHUP in that time is 143 or 129 like any later one, and
the terminal driver takes the signals over as it starts.
"""

from __future__ import annotations

import os
import signal
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
    interpreter, a measurement's child and its group), so none outlives the explorer."""
    for pid in children():
        with suppress(OSError):
            if os.getpgid(pid) == pid:  # leads its own group: take the group
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
    os._exit(code)


def _end_on_signal(signum: int, frame: FrameType | None) -> None:
    end_now(128 + signum)


def exit_on_stop_signals() -> None:
    """Until the terminal driver takes them over: SIGTERM and SIGHUP end the process
    with 128 + the signal (nothing of the terminal has been touched yet)."""
    for signum in STOP_SIGNALS:
        with suppress(ValueError):  # not the main thread
            signal.signal(signum, _end_on_signal)
