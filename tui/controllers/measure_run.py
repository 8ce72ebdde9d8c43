"""One measurement started from the explorer: the child process, its events, cancelling it.

The explorer never imports torch or hip_backend at start-up: the real launcher is
reached through `tui.deps.start_with_hip_backend`, which imports it when `m` is pressed.
Starting happens on a Textual thread worker (the launcher reads the model and
computes the estimate before it spawns the child); the launcher's events arrive
on its reader thread and are posted to the screen as `MeasureEventMessage`s,
which is thread-safe and never blocks that thread.
"""

from __future__ import annotations

import contextlib
import itertools
import threading

from textual.dom import DOMNode
from textual.message import Message

from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasurementFailure
from core.measurement.run import RunEnded, RunEvent
from tui.deps import MeasureHandle, StartMeasurement

CLOSE_WAIT_S = 5.0
"""How long quitting waits for a start that is still spawning the child (see `close`)."""


_run_ids = itertools.count(1)


class MeasureEventMessage(Message):
    """A launcher event of run `run_id`, delivered on the UI thread."""

    def __init__(self, run_id: int, event: RunEvent) -> None:
        super().__init__()
        self.run_id = run_id
        self.event = event


class MeasureRun:
    """A measurement in flight: `begin()` once, then `cancel()` or `close()` at any time.

    Once cancelled the run reports nothing more; the screen shows "cancelled" at once
    and the run still makes sure its child is killed, even if the launcher hands
    the handle over only later.
    """

    def __init__(self, request: MeasureRequest, start: StartMeasurement, target: DOMNode) -> None:
        self.request = request
        self.id = next(_run_ids)
        self._start = start
        self._target = target
        self._lock = threading.Lock()
        self._handle: MeasureHandle | None = None
        self._stopped = False
        self._running = threading.Event()
        self._started = threading.Event()
        """Set once the launcher has returned (or failed)."""

    @property
    def handle(self) -> MeasureHandle | None:
        """The launcher's handle, once it has been returned."""
        return self._handle

    def begin(self) -> None:
        """Start the launcher on a thread worker (quitting never waits on a hung read)."""
        self._target.run_worker(
            self._run, name=f"measure {self.id}", group="measure", thread=True, exit_on_error=False
        )

    def _run(self) -> None:
        self._running.set()
        try:
            self._launch()
        finally:
            self._started.set()

    def _launch(self) -> None:
        try:
            handle = self._start(self.request, self._post)
        except Exception as exc:  # a launcher bug must end the run, not the app
            failure = MeasurementFailure(
                FailureKind.INTERNAL, f"cannot start the measurement: {type(exc).__name__}: {exc}"
            )
            self._post(RunEnded(failure))
            return
        with self._lock:
            self._handle = handle
            stopped = self._stopped
        if stopped:
            handle.cancel()

    def _post(self, event: RunEvent) -> None:
        if self._stopped:
            return
        with contextlib.suppress(Exception):  # the app or its loop is gone: nobody to tell
            self._target.post_message(MeasureEventMessage(self.id, event))

    def cancel(self) -> None:
        """Stop reporting and kill the child (now, or as soon as it exists)."""
        with self._lock:
            self._stopped = True
            handle = self._handle
        if handle is not None:
            handle.cancel()

    def close(self) -> None:
        """Cancel for good, as the app quits.

        A start still in the launcher may be about to spawn the child: wait a moment
        for it so the child is killed rather than orphaned. A start that hangs
        longer (a stalled mount) has not spawned anything yet, and its worker's
        daemon thread (`tui.controllers.loader.DaemonExecutor`) dies with the interpreter.
        """
        self.cancel()
        if self._running.is_set():  # not yet begun: it will see the cancel and stop
            self._started.wait(CLOSE_WAIT_S)
