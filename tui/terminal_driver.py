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
an event loop busy with reads, took 0.2-0.6 s more on a loaded machine), and again
behind whatever Textual's writer thread still holds (the alternate screen's switch,
a frame), later output is dropped, the app is asked to exit, and if it has not ended
`EXIT_GRACE_S` later the process ends there, with the children it started
(`end_now`). A signal ends the process by that signal once the terminal is restored
(a shell's `$?` is 128 + the signal: 143, 129); a closed terminal seen without a
SIGHUP exits 129.

The signals are handled from the moment the terminal is touched: the handlers are
set before Textual's `start_application_mode` writes its first byte. Until the app
says it is ready to exit the usual way (`ready_to_exit`: the explorer's body is in),
a stop restores the terminal and ends the process there, without asking an app whose
screen is half built to shut down.
"""

from __future__ import annotations

import asyncio
import errno
import os
import select
import signal
import sys
import termios
import threading
from contextlib import suppress
from types import FrameType
from typing import TYPE_CHECKING, Any

from textual.drivers.linux_driver import LinuxDriver

if TYPE_CHECKING:
    from textual.app import App

from tui.process_exit import STOP_SIGNALS, children, default_on, end_now

__all__ = ["EXIT_GRACE_S", "HANGUP_EXIT", "RESTORE", "TerminalDriver", "children", "end_now"]
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


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver, which exits the app on SIGTERM, SIGHUP or a hang-up."""

    _restored = False

    def __init__(
        self,
        app: App[Any],
        *,
        debug: bool = False,
        mouse: bool = True,
        size: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        # Kept from the constructor's arguments, not read from the driver's private
        # members: the app to stop, its loop (the constructor runs on it) and the
        # terminal Textual's Linux driver writes to (stderr, as it opens it).
        self.stopping_app = app
        self.app_loop = asyncio.get_running_loop()
        self.terminal = sys.__stderr__

    def start_application_mode(self) -> None:
        # Python-level handlers run at once in the main thread, even while the event
        # loop is busy (asyncio's would wait for the loop to come round); set before
        # the first byte is written, so no signal finds the terminal half switched.
        for signum in STOP_SIGNALS:
            with suppress(ValueError):  # not the main thread (an app run from a worker)
                signal.signal(signum, self._on_signal)
        super().start_application_mode()  # type: ignore[no-untyped-call]
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
        # The terminal restored, the default back (this is the main thread): the end,
        # at the app's exit or on the deadline's thread, is by this signal, and a
        # second one ends the process at once.
        default_on(signum)

    def _stop(self, code: int) -> None:
        """Restore the terminal now, ask the app to exit, end the process if it lingers
        (any thread, or a signal handler)."""
        if self._restored:
            return
        self._restored = True
        self.exit_event.set()  # the input thread ends at its next poll
        with suppress(OSError, termios.error, ValueError):
            if self.attrs_before is not None:
                termios.tcsetattr(self.fileno, termios.TCSANOW, self.attrs_before)
            if self.terminal is not None:  # where Textual writes (stderr: the terminal)
                os.write(self.terminal.fileno(), RESTORE)
        drained = self._restore_behind_queued()
        if not self._ready_to_exit():
            drained.wait(EXIT_GRACE_S)
            end_now(code)
        with suppress(RuntimeError):  # the loop closed meanwhile: the app is gone
            self.app_loop.call_soon_threadsafe(self.stopping_app.exit, None, code)
        deadline = threading.Timer(EXIT_GRACE_S, end_now, (code,))
        deadline.daemon = True
        deadline.start()

    def _restore_behind_queued(self) -> threading.Event:
        """RESTORE again behind what Textual's writer thread still holds (its queue may
        hold the switch to the alternate screen, or a frame, that the direct write
        overtook), then that thread stopped; the event is set once it has written all.
        Through the driver's public `write` (Textual's, which queues on that thread;
        this driver's own drops writes once restored) and `close` (which stops it once
        all it holds is written); before application mode there is no thread, and the
        event is set at once."""
        drained = threading.Event()
        queue_write, close = super().write, super().close

        def finish() -> None:
            with suppress(Exception):  # the terminal may be gone, or nothing was started
                queue_write(RESTORE.decode("ascii"))
                close()  # writes what is queued, then ends the writer thread
            drained.set()

        threading.Thread(target=finish, name="restore behind queued", daemon=True).start()
        return drained

    def _ready_to_exit(self) -> bool:
        """Whether the app can be asked to exit (the explorer: its body is in)."""
        ready = getattr(self.stopping_app, "ready_to_exit", None)
        return bool(ready()) if callable(ready) else True

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
