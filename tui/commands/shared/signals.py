"""SIGTERM stops a measuring command the way Ctrl-C does.

Python's default for SIGTERM ends the process at once: no `finally`, so a child's
process group is left to its parent watcher and a split load's scratch folder stays.
Inside `sigterm_as_interrupt()` SIGTERM raises `Terminated` (a KeyboardInterrupt)
where the main thread is, so the launcher's Ctrl-C path runs: the child's group is
killed and reaped, scratch folders removed, the progress display closed. The command
then exits 128 + SIGTERM (143), as it exits 128 + SIGINT (130) for Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop as for Ctrl-C."""


EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM


def exit_status(interrupt: KeyboardInterrupt) -> int:
    """130 for Ctrl-C, 143 for SIGTERM."""
    return EXIT_TERMINATED if isinstance(interrupt, Terminated) else EXIT_INTERRUPTED


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises `Terminated` in the main thread (once: a second
    SIGTERM during the clean-up is ignored, so the clean-up finishes)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (a command run from a worker)
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
