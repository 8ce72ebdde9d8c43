"""The outcome of one run, single-device or split: a run of one rank or of N.

`hip_backend.start_run` produces it; every surface (`measure` text and JSON, `table`,
the explorer) reads this one type. A single-device run is a run of one rank with no
plan. The handle's callback gets the child's progress and notices, then exactly one
`RunEnded` with this outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.measurement.protocol import MeasureNotice, MeasureProgress
from core.measurement.result import MeasuredPeak, MeasurementFailure
from core.parallel.plan import ParallelPlan


@dataclass(frozen=True)
class MeasuredRun:
    """Every rank's peak, in rank order, each with its estimate attached."""

    ranks: tuple[MeasuredPeak, ...]
    plan: ParallelPlan | None = None
    """The split the ranks ran under; None for one device."""
    wall_seconds: float | None = None
    """The whole run's wall time as the parent saw it (split runs)."""

    def __post_init__(self) -> None:
        if not self.ranks:
            raise ValueError("a run has at least one rank")
        if self.plan is None and len(self.ranks) != 1:
            raise ValueError("a run without a plan has exactly one rank")

    @property
    def peak(self) -> MeasuredPeak:
        """The first rank's peak: the peak of a single-device run."""
        return self.ranks[0]

    @property
    def covered(self) -> bool:
        """True when every rank ended well, its estimate is known and covers its peak
        (a failed run covers nothing: `MeasuredPeak.failed_status`)."""
        return all(p.covered is True for p in self.ranks)


RunOutcome = MeasuredRun | MeasurementFailure


@dataclass(frozen=True)
class RunEnded:
    """The run's one terminal event: its outcome."""

    outcome: RunOutcome


RunEvent = MeasureProgress | MeasureNotice | RunEnded
"""What a run's callback receives."""


def peak_or_failure(outcome: RunOutcome) -> MeasuredPeak | MeasurementFailure:
    """A single-device run's peak, or the failure (for callers that measure one device)."""
    return outcome.peak if isinstance(outcome, MeasuredRun) else outcome
