"""What `measure` and `table` show on stderr while a run measures: its phases, for a
single device and for a split (rank 0's phases stand for the ranks') alike.

The child reports each phase (load, warm-up prefill and decode, prefill, decode) as
progress events from step 0 to its last step (hip_backend's throttle passes both).
`PhaseTracker` turns them into phase starts, steps and ends, timed in this process.
Three views: on a terminal a rich display, one bar per phase with tensors or tokens
done of total, tokens/s and elapsed time (`RichPhases`); elsewhere one line per phase
as it starts and as it ends, with elapsed seconds (`PhaseLines`); with `--quiet`
nothing (`QuietPhases`). Everything goes to stderr: stdout stays the result.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.display_text import clean_text
from core.measurement.protocol import MeasureNotice, MeasureProgress
from core.measurement.run import MeasuredRun, RunEnded, RunEvent

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from core.measurement.engine import Engine

Clock = Callable[[], float]

START = "start"
"""The phase before the child's first event: process start, runtime import, warm-up
of kernels on tiny tensors."""

_LABELS = {
    "load": "load",
    "warmup prefill": "warm-up prefill",
    "warmup decode": "warm-up decode",
    "prefill": "prefill",
    "decode": "decode",
}
_UNITS = {"load": "tensors", "prefill": "tokens", "decode": "tokens"}


@dataclass
class Phase:
    """One phase of a run as this process saw it (times from the tracker's clock)."""

    key: str
    label: str
    started: float
    done: int = 0
    total: int = 0
    ended: float | None = None

    @property
    def unit(self) -> str:
        """`tokens`, `tensors`, or "" where the engine reports no count (mlx's load)."""
        if self.total <= 1:
            return ""
        return _UNITS.get(self.key.removeprefix("warmup ").strip(), "steps")

    def elapsed(self, now: float) -> float:
        """Seconds since the phase started (to its end, once ended)."""
        return (self.ended if self.ended is not None else now) - self.started

    def rate(self, now: float) -> float | None:
        """Tokens a second so far; None for a phase that does not count tokens."""
        seconds = self.elapsed(now)
        if self.unit != "tokens" or seconds <= 0 or self.done <= 0:
            return None
        return self.done / seconds

    def count_text(self) -> str:
        """`256/512 tokens`, or "" without a count."""
        return f"{self.done:,}/{self.total:,} {self.unit}" if self.unit else ""

    def rate_text(self, now: float) -> str:
        """`497.1 tokens/s`, or ""."""
        rate = self.rate(now)
        return f"{rate:,.1f} tokens/s" if rate is not None else ""


@dataclass
class PhaseTracker:
    """Phase starts, steps and ends from the child's events (pure: the clock is given)."""

    engine: Engine
    clock: Clock = time.monotonic
    phases: list[Phase] = field(default_factory=list)

    def begin(self) -> Phase:
        """The run was started: its first phase is the child starting up."""
        phase = Phase(START, f"engine start ({self.engine})", self.clock())
        self.phases.append(phase)
        return phase

    @property
    def current(self) -> Phase | None:
        """The phase in progress, if any."""
        last = self.phases[-1] if self.phases else None
        return last if last is not None and last.ended is None else None

    def step(self, event: MeasureProgress) -> tuple[Phase | None, Phase | None, Phase | None]:
        """Apply one progress event: (the phase it ended, the phase it started, the phase
        it stepped). A phase with nothing to do (0 of 0 tokens) is not shown."""
        key = event.phase.strip()
        now = self.clock()
        current = self.current
        ended = started = None
        if current is None or current.key != key:
            if event.total <= 0:
                return None, None, None
            if current is not None:
                current.ended = now
                ended = current
            started = Phase(key, _LABELS.get(key, clean_text(key)), now)
            self.phases.append(started)
            current = started
        current.done, current.total = event.done, event.total
        if event.done >= event.total:
            current.ended = now
        return ended, started, current

    def finish(self) -> Phase | None:
        """The run ended: the phase still open, now ended (None when none was)."""
        current = self.current
        if current is not None:
            current.ended = self.clock()
        return current


class PhaseView:
    """A measurement's `on_event`: notices as lines, progress through the tracker."""

    def __init__(self, engine: Engine, clock: Clock = time.monotonic) -> None:
        self.tracker = PhaseTracker(engine, clock)
        self._open = False

    def begin(self) -> None:
        """Call right before the run starts (the child's start-up is timed from here)."""
        self._open = True
        self.started(self.tracker.begin())

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, MeasureNotice):
            self.notice(f"vramscope: {clean_text(event.message)}")
        elif isinstance(event, MeasureProgress):
            ended, started, stepped = self.tracker.step(event)
            if ended is not None:
                self.ended(ended, stopped=False)
            if started is not None:
                self.started(started)
            if stepped is not None:
                self.stepped(stepped)
                if stepped.ended is not None:
                    self.ended(stepped, stopped=False)
        elif isinstance(event, RunEnded):
            self.close(stopped=not isinstance(event.outcome, MeasuredRun))

    def close(self, stopped: bool = True) -> None:
        """End the phase still open (a run that stopped there) and the display."""
        if not self._open:
            return
        self._open = False
        last = self.tracker.finish()
        if last is not None:
            self.ended(last, stopped=stopped)
        self.stop()

    # What each view does; the base shows notices only.
    def notice(self, line: str) -> None:
        print(line, file=sys.stderr)

    def started(self, phase: Phase) -> None:
        pass

    def stepped(self, phase: Phase) -> None:
        pass

    def ended(self, phase: Phase, *, stopped: bool) -> None:
        pass

    def stop(self) -> None:
        pass


class QuietPhases(PhaseView):
    """`--quiet`: nothing while the run goes, not even the child's notices (the parent's
    own warnings are printed by the command; the result carries the rest)."""

    def notice(self, line: str) -> None:
        pass


class PhaseLines(PhaseView):
    """No terminal: one line per phase as it starts and one as it ends."""

    def started(self, phase: Phase) -> None:
        print(f"vramscope: {phase.label}: started", file=sys.stderr, flush=True)

    def ended(self, phase: Phase, *, stopped: bool) -> None:
        now = self.tracker.clock()
        figures = ", ".join(t for t in (phase.count_text(), phase.rate_text(now)) if t)
        what = "stopped after" if stopped else "done in"
        tail = f" ({figures})" if figures else ""
        print(
            f"vramscope: {phase.label}: {what} {phase.elapsed(now):.2f} s{tail}",
            file=sys.stderr,
            flush=True,
        )


class RichPhases(PhaseView):
    """A terminal: rich's live display on stderr, one bar per phase."""

    def __init__(self, engine: Engine, clock: Clock = time.monotonic) -> None:
        super().__init__(engine, clock)
        self._progress: Progress | None = None
        self._tasks: dict[int, TaskID] = {}

    def _live_bars(self) -> Progress:
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn

            self._progress = Progress(
                TextColumn("{task.description}", style="bold"),
                BarColumn(bar_width=30),
                TextColumn("{task.fields[count]}"),
                TextColumn("{task.fields[rate]}"),
                _seconds_column(),
                console=Console(stderr=True, highlight=False),
                refresh_per_second=8,
                get_time=self.tracker.clock,
            )
            self._progress.start()
        return self._progress

    def notice(self, line: str) -> None:
        if self._progress is None:
            print(line, file=sys.stderr)
        else:  # printed above the live bars
            self._progress.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def started(self, phase: Phase) -> None:
        progress = self._live_bars()
        self._tasks[id(phase)] = progress.add_task(
            phase.label, total=phase.total if phase.unit else None, count="", rate=""
        )

    def stepped(self, phase: Phase) -> None:
        self._update(phase, finished=False)

    def ended(self, phase: Phase, *, stopped: bool) -> None:
        self._update(phase, finished=not stopped)
        task = self._tasks.get(id(phase))
        if task is not None and self._progress is not None:
            self._progress.stop_task(task)  # its elapsed time stops here

    def _update(self, phase: Phase, *, finished: bool) -> None:
        task = self._tasks.get(id(phase))
        if task is None or self._progress is None:
            return
        fields: dict[str, Any] = {
            "count": phase.count_text(),
            "rate": phase.rate_text(self.tracker.clock()),
        }
        if phase.unit:
            self._progress.update(task, total=phase.total, completed=phase.done, **fields)
        elif finished:  # a phase without a count: a full bar once it is done
            self._progress.update(task, total=1, completed=1, **fields)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def _seconds_column() -> Any:
    """A phase's elapsed seconds, `2.8 s` (rich's own column shows whole seconds)."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class SecondsColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(f"{task.elapsed or 0.0:.1f} s", style="progress.elapsed")

    return SecondsColumn()


def phase_view(engine: Engine, *, quiet: bool, terminal: bool | None = None) -> PhaseView:
    """The view for this stderr: rich on a terminal, lines elsewhere, none when quiet."""
    if quiet:
        return QuietPhases(engine)
    if sys.stderr.isatty() if terminal is None else terminal:
        return RichPhases(engine)
    return PhaseLines(engine)
