"""A stand-in for `hip_backend.start_run` that keeps the launcher's promises.

It returns at once, delivers events from another thread, and delivers exactly
one terminal event per handle: `finish`, `fail`, or the CANCELLED failure that
`cancel()` sends. Tests drive it to reach UI states a real child reaches only
by chance (a progress bar half way, a run that never ends).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from core.measurement.run import MeasuredRun, RunEnded, RunEvent

MeasureEvent = RunEvent


class FakeHandle:
    """One run: `emit` events as the child would, then one terminal event."""

    def __init__(self, request: MeasureRequest, on_event: Callable[[MeasureEvent], None]) -> None:
        self.request = request
        self._on_event = on_event
        self._lock = threading.Lock()
        self.cancelled = False
        self.terminal: MeasureEvent | None = None

    @property
    def pid(self) -> int | None:
        return None

    @property
    def done(self) -> bool:
        return self.terminal is not None

    def emit(self, event: MeasureEvent) -> None:
        """Deliver an event from a thread of its own, as the launcher's reader does."""
        with self._lock:
            if self.terminal is not None:
                return
            if isinstance(event, RunEnded):
                self.terminal = event
        thread = threading.Thread(target=self._on_event, args=(event,))
        thread.start()
        thread.join()

    def finish(self, peak: MeasuredPeak) -> None:
        self.emit(RunEnded(MeasuredRun((peak,))))

    def fail(self, failure: MeasurementFailure) -> None:
        self.emit(RunEnded(failure))

    def cancel(self) -> None:
        if not self.done:
            self.cancelled = True
        self.fail(MeasurementFailure(FailureKind.CANCELLED, "the measurement was cancelled"))


class FakeLauncher:
    """Records each request; each new handle first emits `script`."""

    def __init__(self, script: Sequence[MeasureEvent] = ()) -> None:
        self.script = tuple(script)
        self.handles: list[FakeHandle] = []
        self.started = threading.Event()

    def __call__(
        self, request: MeasureRequest, on_event: Callable[[MeasureEvent], None]
    ) -> FakeHandle:
        handle = FakeHandle(request, on_event)
        self.handles.append(handle)
        for event in self.script:
            handle.emit(event)
        self.started.set()
        return handle
