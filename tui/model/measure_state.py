"""The explorer's measurements: the run in flight, the last failure, the last result.

The measurement controller owns one `Measurements`, feeds it the launcher's
events and asks it what the measured panel should show for the model on screen
(`panel`, a `PanelView`). Pure: no widget, no thread.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from core.kind import Kind
from core.measurement.comparison import margin
from core.measurement.engine import DEFAULT_ENGINE, Engine
from core.measurement.protocol import MeasureNotice, MeasureProgress
from core.measurement.report import covered_words
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from core.measurement.run import MeasuredRun, RunEvent
from core.units import format_bytes_short
from tui.model.control_specs import KV_DTYPE
from tui.model.state import ExplorerState


class Run(Protocol):
    """What the state needs of a run in flight (`tui.controllers.measure_run.MeasureRun`)."""

    @property
    def id(self) -> int:
        """The run's number, carried by its events."""

    @property
    def request(self) -> MeasureRequest:
        """What it measures."""

    def cancel(self) -> None:
        """Kill the child."""


_PHASES = {
    "load": "loading tensors",
    "warmup prefill": "warm-up prefill token",
    "warmup decode": "warm-up decode token",
    "prefill": "prefill token",
    "decode": "decode token",
}


def progress_label(progress: MeasureProgress | None, engine: Engine = DEFAULT_ENGINE) -> str:
    """`prefill token 256/512`, `decode token 40/128`; `starting…` before the first step."""
    if progress is None:
        return f"starting: importing {engine}…"
    words = _PHASES.get(progress.phase.strip(), progress.phase.strip())
    return f"{words} {progress.done}/{progress.total}"


def activity_words(run: Run | None, seconds: float, progress: MeasureProgress | None) -> str:
    """The summary line's words for a run in flight ("" when none is)."""
    if run is None:
        return ""
    engine = run.request.engine
    return f"measuring ({engine}) {seconds:.1f} s · {progress_label(progress, engine)}"


CANCELLED = MeasurementFailure(
    FailureKind.CANCELLED, "the measurement was cancelled and its process killed"
)


@dataclass
class Measurements:
    """One run at a time; a result or failure stays with the model it was for."""

    measured: MeasuredPeak | None = None
    """The last peak (a run's result, or one handed over)."""
    run: Run | None = None
    """The run in flight, if any."""
    failure: tuple[str, MeasurementFailure] | None = None
    """The last run's failure and the model it was for."""
    started: float = 0.0
    progress: MeasureProgress | None = None
    notice: str = ""

    def begin(self, run: Run, now: float) -> None:
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

    def apply(self, run_id: int, event: RunEvent) -> bool:
        """Take an event of run `run_id`; True when the run ended (late words are dropped)."""
        run = self.run
        if run is None or run_id != run.id:
            return False
        if isinstance(event, MeasureProgress):
            self.progress = event
            return False
        if isinstance(event, MeasureNotice):
            self.notice = event.message
            return False
        if isinstance(event.outcome, MeasuredRun):  # the run's one end: RunEnded
            self.run, self.measured = None, event.outcome.peak
        else:
            self.fail(run.request.model, event.outcome)
        return True

    def activity(self, now: float) -> str:
        """What the run in flight is doing, in a few words ("" when none is)."""
        return activity_words(self.run, now - self.started, self.progress)

    def runs(self, history: Collection[MeasuredPeak]) -> list[MeasuredPeak]:
        """The history's runs plus the last peak if the history lacks it."""
        runs = list(history)
        if self.measured is not None and self.measured not in runs:
            runs.append(self.measured)
        return runs

    def panel(
        self,
        names: Collection[str],
        estimate_for: Callable[[MeasuredPeak], int | None],
        now: float,
    ) -> PanelView:
        """The run in flight, else the failure or result for the model on screen (`names`).

        A cancelled run leaves the previous result of the same model in place.
        """
        if self.run is not None:
            return PanelView(
                PanelKind.RUNNING,
                request=self.run.request,
                seconds=now - self.started,
                progress=self.progress,
                notice=self.notice,
            )
        peak = self.measured
        estimate = estimate_for(peak) if peak is not None and peak.model in names else None
        if self.failure is not None and self.failure[0] in names:
            model, failure = self.failure
            if failure.kind is FailureKind.CANCELLED and peak is not None and estimate is not None:
                return PanelView(
                    PanelKind.RESULT, peak=peak, estimate=estimate, notice=CANCELLED_NOTE
                )
            return PanelView(PanelKind.FAILURE, model=model, failure=failure)
        if peak is None or estimate is None:
            return PanelView(PanelKind.HIDDEN)
        return PanelView(PanelKind.RESULT, peak=peak, estimate=estimate)


CANCELLED_NOTE = "the new run was cancelled; this is the previous result"


class PanelKind(Kind):
    """What the measured panel shows."""

    HIDDEN = ""
    RUNNING = "running"
    RESULT = "result"
    FAILURE = "failure"


@dataclass(frozen=True)
class PanelView:
    """What the measured panel shows, and what it shows it of."""

    kind: PanelKind
    request: MeasureRequest | None = None
    seconds: float = 0.0
    progress: MeasureProgress | None = None
    notice: str = ""
    peak: MeasuredPeak | None = None
    estimate: int = 0
    model: str = ""
    failure: MeasurementFailure | None = None
    differs: tuple[tuple[str, str], ...] = ()
    """Where the result's run and the screen differ, as (the run's words, the screen's):
    empty when the breakdown's Total estimate is the run's own estimate."""


def run_differences(peak: MeasuredPeak, state: ExplorerState) -> tuple[tuple[str, str], ...]:
    """The settings of a measured run that the screen no longer has: context P + G, in-flight
    budget, KV dtype, batch (runs are batch 1) and the formula it is held against."""
    pairs = (
        (f"{peak.context_tokens:,} tokens", f"{state.max_tokens:,} tokens"),
        (f"in-flight {peak.inflight_mib} MiB", f"in-flight {state.inflight_mib} MiB"),
        (f"{peak.kv_cache_mode} KV", f"{KV_DTYPE.choice(state).word} KV"),
        ("batch 1", f"batch {state.batch}"),
        (f"{peak.estimate_backend.label} formula", f"{state.backend.label} formula"),
    )
    return tuple((run, screen) for run, screen in pairs if run != screen)


def result_words(view: PanelView) -> str:
    """The summary line's words for a result on show ("" when none is): the peak and
    whether the estimate covers it, for sizes where the panel is off screen. The
    engine comes last: on a narrow line it is what the end cuts (the panel names it)."""
    if view.kind is not PanelKind.RESULT or view.peak is None:
        return ""
    peak = view.peak
    m = margin(view.estimate, peak.peak_bytes)
    verdict = covered_words(m, marked=True, failed=peak.failed_status)
    if view.differs:  # the verdict is the run's, never the settings on screen
        verdict += f" at the run's {view.differs[0][0]}"
    return f"measured {format_bytes_short(peak.peak_bytes)} {verdict} ({peak.engine})"
