"""The explorer's measurements: the run in flight, the last failure, the last result.

The screen owns one `Measurements`, feeds it the launcher's events and asks it
what the measured panel should show for the model on screen. No widget or
thread is touched here besides the panel handed to `paint`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from core.measurement import (
    FailureKind,
    MeasuredPeak,
    MeasureEvent,
    MeasureFailed,
    MeasurementFailure,
    MeasureNotice,
    MeasureProgress,
    MeasureResult,
)
from tui.measure_run import MeasureRun
from tui.widgets.measured_panel import MeasuredPanel

CANCELLED = MeasurementFailure(
    FailureKind.CANCELLED, "the measurement was cancelled and its process killed"
)


@dataclass
class Measurements:
    """One run at a time; a result or failure stays with the model it was for."""

    measured: MeasuredPeak | None = None
    """The last peak (a run's result, or one handed over)."""
    run: MeasureRun | None = None
    """The run in flight, if any."""
    failure: tuple[str, MeasurementFailure] | None = None
    """The last run's failure and the model it was for."""
    started: float = 0.0
    progress: MeasureProgress | None = None
    notice: str = ""

    def begin(self, run: MeasureRun, now: float) -> None:
        """A new run is in flight (the previous failure is forgotten)."""
        self.run, self.started = run, now
        self.failure, self.progress, self.notice = None, None, ""

    def fail(self, model: str, failure: MeasurementFailure) -> None:
        """End any run with this failure for `model`."""
        self.run = None
        self.failure = (model, failure)

    def cancel(self) -> None:
        """Kill the run in flight and say so."""
        run = self.run
        if run is not None:
            run.cancel()
            self.fail(run.request.model, CANCELLED)

    def apply(self, run_id: int, event: MeasureEvent) -> bool:
        """Take an event of run `run_id`; True when the run ended (late words are dropped)."""
        run = self.run
        if run is None or run_id != run.id:
            return False
        if isinstance(event, MeasureProgress):
            self.progress = event
        elif isinstance(event, MeasureNotice):
            self.notice = event.message
        elif isinstance(event, MeasureResult):
            self.run, self.measured = None, event.peak
            return True
        elif isinstance(event, MeasureFailed):
            self.fail(run.request.model, event.failure)
            return True
        return False

    def runs(self, history: Collection[MeasuredPeak]) -> list[MeasuredPeak]:
        """The history's runs plus the last peak if the history lacks it."""
        runs = list(history)
        if self.measured is not None and self.measured not in runs:
            runs.append(self.measured)
        return runs

    def paint(
        self,
        panel: MeasuredPanel,
        names: Collection[str],
        estimate_for: Callable[[MeasuredPeak], int | None],
        now: float,
    ) -> None:
        """The run in flight, else the failure or result for the model on screen (`names`)."""
        if self.run is not None:
            panel.show_running(self.run.request, now - self.started, self.progress, self.notice)
            return
        if self.failure is not None and self.failure[0] in names:
            panel.show_failure(*self.failure)
            return
        peak = self.measured
        estimate = estimate_for(peak) if peak is not None and peak.model in names else None
        if peak is None or estimate is None:
            panel.clear()
            return
        panel.show_result(peak, estimate)
