"""Under the breakdown: a measurement in flight, its result beside the estimate, or its failure.

One place for all three, so the eye finds the measurement where the estimate
is. Hidden when there is nothing to show. The text comes from
`tui.render.measure_text`; this widget only lays it out, with a progress bar while a
run is in flight.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar, Static

from core.measurement.protocol import MeasureProgress
from core.measurement.request import MeasureRequest
from core.measurement.result import MeasuredPeak, MeasurementFailure
from tui.model.measure_state import PanelKind, PanelView, progress_label
from tui.render.measure_text import (
    failure_text,
    result_rows,
    rows_plain,
    rows_table,
    running_rows,
)

CANCEL_HINT = "m or Esc cancels"


class MeasuredPanel(Vertical):
    """`show_running`, `show_result`, `show_failure` or `clear`; `kind` says which is shown."""

    DEFAULT_CSS = """
    MeasuredPanel {
        height: auto;
        display: none;
        &.-shown { display: block; }
        & > Static { height: auto; }
        & > #measured-progress { height: 1; display: none; }
        &.-running > #measured-progress { display: block; }
        & #measured-phase { width: 32; height: 1; }
        & ProgressBar { width: 1fr; }
        & #measured-bar Bar { width: 1fr; }
        & #measured-note { color: $text-muted; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.kind = PanelKind.HIDDEN
        """What is shown (`PanelKind.HIDDEN` when nothing is)."""
        self.peak: MeasuredPeak | None = None
        self._words: list[str] = []
        self._shown: tuple[PanelKind, str] | None = None
        self._text = Static("", id="measured-text", markup=False)
        self._phase = Static("", id="measured-phase", markup=False)
        self._bar = ProgressBar(total=None, show_eta=False, id="measured-bar")
        self._note = Static("", id="measured-note", markup=False)
        self._mounted_parts = False

    def on_mount(self) -> None:
        if self.kind is not PanelKind.HIDDEN:  # shown before it was mounted
            self._mount_parts()

    def _mount_parts(self) -> None:
        # Mounted when first shown, not composed: most sessions never measure, and these
        # seven widgets would be styled before the first frame for nothing.
        if not self._mounted_parts and self.is_attached:
            self._mounted_parts = True
            self.mount(self._text, Horizontal(self._phase, self._bar, id="measured-progress"))
            self.mount(self._note)

    @property
    def text(self) -> str:
        """The plain words on show, one string (empty when hidden)."""
        return "\n".join(w for w in self._words if w)

    def show_running(
        self,
        request: MeasureRequest,
        seconds: float,
        progress: MeasureProgress | None,
        notice: str = "",
    ) -> None:
        """A run in flight: what it measures, its phase with a bar, the latest notice."""
        self.peak = None
        rows = running_rows(request, seconds)
        self._set(PanelKind.RUNNING, rows_table(rows), rows_plain(rows))
        label = progress_label(progress, request.engine)
        self._phase.update(label)
        if progress is None or progress.total <= 0:
            self._bar.update(total=None, progress=0)
        else:
            self._bar.update(total=progress.total, progress=min(progress.done, progress.total))
        note = CANCEL_HINT + (f"  ·  {notice}" if notice else "")
        self._note.update(note)
        self._note.display = True
        self._words[1:] = [label, note]

    def show_result(
        self,
        peak: MeasuredPeak,
        estimate_bytes: int,
        note: str = "",
        differs: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """A peak beside the estimate for its workload (and a note above it, if any);
        `differs`: the run's settings the screen no longer has."""
        self.peak = peak
        rows = result_rows(peak, estimate_bytes, differs)
        if note:
            rows.insert(0, ("Note", Text(note, "italic")))
        self._set(PanelKind.RESULT, rows_table(rows), rows_plain(rows))

    def show_failure(self, model: str, failure: MeasurementFailure) -> None:
        """Why a run ended without a peak, in place of the result."""
        self.peak = None
        self._set(PanelKind.FAILURE, failure_text(model, failure))

    def show(self, view: PanelView) -> None:
        """Show what `Measurements.panel` says."""
        if view.kind is PanelKind.RUNNING and view.request is not None:
            self.show_running(view.request, view.seconds, view.progress, view.notice)
        elif view.kind is PanelKind.RESULT and view.peak is not None:
            self.show_result(view.peak, view.estimate, view.notice, view.differs)
        elif view.kind is PanelKind.FAILURE and view.failure is not None:
            self.show_failure(view.model, view.failure)
        else:
            self.clear()

    def clear(self) -> None:
        """Hide the panel."""
        self.peak = None
        self._set(PanelKind.HIDDEN, Text(""))

    def _set(self, kind: PanelKind, body: Text | Table, plain: str | None = None) -> None:
        words = plain if plain is not None else body.plain if isinstance(body, Text) else ""
        if (kind, words) == self._shown:
            return  # recompute() repaints on every key press; most change nothing here
        self._shown = (kind, words)
        self.kind = kind
        self._words = [words]
        shown = kind is not PanelKind.HIDDEN
        if shown:
            self._mount_parts()
        self.set_class(shown, "-shown")
        self.set_class(kind is PanelKind.RUNNING, "-running")
        self._note.display = kind is PanelKind.RUNNING
        self._text.update(body)
        self._text.refresh(layout=True)
        self.refresh(layout=True)
