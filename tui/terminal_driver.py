"""The explorer's terminal driver: Textual's, ending the app cleanly when the terminal goes.

Textual's Linux driver leaves three ways out unhandled:

- SIGTERM and SIGHUP keep Python's default, which ends the process at once: the
  alternate screen, mouse reporting and the hidden cursor are left to the shell.
- A closed terminal (its pty master gone) makes the input thread's read fail with
  EIO, which Textual turns into a panic with a traceback.
- Where the read returns end-of-file instead, Textual's input loop spins on it
  (once 18 minutes at 92% CPU).

Here each of them stops the app the same way (`_stop`): the terminal is restored at
once, with Textual's own sequences written straight to it (the app's teardown, and
an event loop busy with reads, took 0.2-0.6 s more on a loaded machine), later output
is dropped, the app is asked to exit, and if it has not ended `EXIT_GRACE_S` later
the process ends there, with the children it started (`end_now`).
The exit status is 128 + the signal, 129 for a hang-up.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import termios
import threading
from contextlib import suppress
from types import FrameType
from typing import NoReturn

from textual.drivers.linux_driver import LinuxDriver

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
HANGUP_EXIT = 128 + signal.SIGHUP
"""The status of an explorer whose terminal went away, as for SIGHUP."""
EXIT_GRACE_S = 0.2
"""How long the app's teardown may take after a stop before the process ends."""
RESTORE = (
    b"\x1b[?2004l"  # bracketed paste off
    b"\x1b[?7h"  # line wrap on
    b"\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l"  # mouse reporting off
    b"\x1b[<u"  # the Kitty keyboard protocol off, before leaving the alternate screen
    b"\x1b[?1049l"  # alternate screen off
    b"\x1b[?25h"  # cursor shown
    b"\x1b[?1004l"  # focus reporting off
)
"""What Textual's `stop_application_mode` writes, in its order."""
_HANGUP = select.POLLHUP | select.POLLERR | select.POLLNVAL


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


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver, which exits the app on SIGTERM, SIGHUP or a hang-up."""

    _restored = False

    def start_application_mode(self) -> None:
        super().start_application_mode()  # type: ignore[no-untyped-call]
        # Python-level handlers run at once in the main thread, even while the event
        # loop is busy (asyncio's would wait for the loop to come round).
        for signum in STOP_SIGNALS:
            with suppress(ValueError):  # not the main thread (an app run from a worker)
                signal.signal(signum, self._on_signal)
        threading.Thread(target=self._watch_hangup, name="hang-up watch", daemon=True).start()

    def write(self, data: str) -> None:
        if not self._restored:  # once restored, a late frame would undo it
            super().write(data)

    def stop_application_mode(self) -> None:
        if self._restored:
            return
        with suppress(OSError):  # the terminal may be gone: restoring it is best effort
            super().stop_application_mode()
        self._restored = True

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop(128 + signum)

    def _stop(self, code: int) -> None:
        """Restore the terminal now, ask the app to exit, end the process if it lingers
        (any thread, or a signal handler)."""
        if self._restored:
            return
        self._restored = True
        self.exit_event.set()  # the input thread ends at its next poll
        with suppress(OSError, termios.error):
            if self.attrs_before is not None:
                termios.tcsetattr(self.fileno, termios.TCSANOW, self.attrs_before)
            if self._file is not None:  # where Textual writes (stderr: the terminal)
                os.write(self._file.fileno(), RESTORE)
        with suppress(RuntimeError):  # the loop closed meanwhile: the app is gone
            self._loop.call_soon_threadsafe(self._app.exit, None, code)
        deadline = threading.Timer(EXIT_GRACE_S, end_now, (code,))
        deadline.daemon = True
        deadline.start()

    def _watch_hangup(self) -> None:
        poller = select.poll()
        poller.register(self.fileno, 0)  # POLLHUP, POLLERR and POLLNVAL always report
        while not self._restored:
            try:
                events = poller.poll(100)
            except OSError:
                events = [(self.fileno, select.POLLERR)]
            if any(mask & _HANGUP for _fd, mask in events):
                self._stop(HANGUP_EXIT)
                return

    def run_input_thread(self) -> None:
        try:
            super().run_input_thread()
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.EBADF, errno.ENXIO):
                raise
            self._stop(HANGUP_EXIT)
