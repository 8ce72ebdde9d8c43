"""The explorer's measurement lifecycle: start (`m`), progress, result or failure, cancel, quit.

The controller owns the run in flight (`tui.controllers.measure_run.MeasureRun`), the
seconds ticker and the pure `Measurements` record; the screen forwards the
launcher's events here and repaints whatever `on_change` asks it to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textual.screen import Screen
from textual.timer import Timer

from core.catalog.entry import CatalogEntry
from core.estimate.snapshot import ModelSnapshot
from core.measurement.engine import Engine
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from tui.controllers.measure_run import MeasureEventMessage, MeasureRun
from tui.deps import AppDeps
from tui.model.measure_plan import measure_request
from tui.model.measure_state import Measurements
from tui.model.state import ExplorerState

TICK_S = 0.5
"""How often the seconds of a run in flight are repainted."""


def unsupported(engine: Engine, snapshot: ModelSnapshot | None) -> MeasurementFailure | None:
    """The engine's refusal, known before a child starts: its runtime is not installed
    (naming the extra to install), or it does not load the model's family."""
    from hip_backend import config_refusal, missing_engine  # no torch: find, never import

    missing = missing_engine(engine)
    if missing is not None or snapshot is None or snapshot.config is None:
        return missing
    return config_refusal(engine, snapshot.config)


class MeasureController:
    """One run at a time on behalf of a screen."""

    def __init__(
        self,
        screen: Screen[Any],
        deps: AppDeps,
        models_dirs: Sequence[Path],
        measured: MeasuredPeak | None,
        on_change: Callable[[bool], None],
    ) -> None:
        self._screen = screen
        self.deps = deps
        self.models_dirs = tuple(models_dirs)
        self.state = Measurements(measured)
        """The run in flight, the last failure and the last peak."""
        self._on_change = on_change
        """Called with True when a run ended with a new peak (the history has grown)."""
        self._timer: Timer | None = None

    @property
    def running(self) -> bool:
        """True while a run is in flight."""
        return self.state.run is not None

    def toggle(
        self, state: ExplorerState, entry: CatalogEntry | None, snapshot: ModelSnapshot | None
    ) -> None:
        """`m`: measure the model on screen; while a run is in flight, cancel it."""
        if self.running:
            self.cancel()
            return
        try:
            request = measure_request(state, entry, self.models_dirs)
        except ValueError as exc:  # a request the launcher would refuse: say so in place
            failure = MeasurementFailure(FailureKind.INTERNAL, f"cannot measure: {exc}")
            self.state.fail(state.model, failure)
            self._on_change(False)
            return
        refused = unsupported(request.engine, snapshot)
        if refused is not None:  # say so now, not after seconds of a child starting
            self.state.fail(state.model, refused)
            self._on_change(False)
            return
        run = MeasureRun(request, self.deps.start_measurement, self._screen)
        self.state.begin(run, self.deps.clock())
        run.begin()
        self._timer = self._screen.set_interval(TICK_S, lambda: self._on_change(False))
        self._on_change(False)

    def show(self, peak: MeasuredPeak | None) -> None:
        """Show a peak handed over from outside beside the estimate (None hides it)."""
        self.state.measured = peak
        self._on_change(False)

    def cancel(self) -> None:
        """Kill the run in flight (if any) and say so in place."""
        self.state.cancel()
        self._stop_timer()
        self._on_change(False)

    def take(self, message: MeasureEventMessage) -> None:
        """A launcher event: progress repaints; an end stops the ticker."""
        if not self.state.apply(message.run_id, message.event):
            self._on_change(False)
            return
        self._stop_timer()
        self._on_change(self.state.failure is None)

    def close(self) -> None:
        """The screen is going: kill a run still in flight."""
        run = self.state.run
        self._stop_timer()
        if isinstance(run, MeasureRun):
            self.state.run = None
            run.close()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
