"""vramscope's one verdict value (`Verdict`) and the one function that words it.

Every surface that says whether a model fits (the explorer's breakdown and status
line, the ranks panel, `fit`'s table and the Fits views, `fit --hub`'s bound rows)
takes a `Verdict` and words it with `verdict_words`: one device (mlxcel's estimate
against the available memory), a split plan (every rank within its own memory), the
calibrated total, or a Hub listing's `≈` bound. mlxcel's own banner line (`FITS: ...`
/ `DOES NOT FIT: ...`, `core.estimate.report`) is mlxcel's contract and is not worded
here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.kind import Kind
from core.units import format_bytes_short

if TYPE_CHECKING:
    from core.estimate.estimate import MemoryEstimate
    from core.parallel.plan import RankEstimate

BOUND_MARK = "≈"
"""Marks a listing's bound (`fit --hub`, the Fits view's Hub scope): not the answer."""


class Scope(Kind):
    """What a verdict holds against what."""

    DEVICE = "device"
    """One device (or one rank): mlxcel's estimate against the available memory."""
    PLAN = "plan"
    """A split: every rank's estimate against its own available memory."""
    CALIBRATED = "calibrated"
    """vramscope's calibrated total against the same available memory."""
    BOUND = "bound"
    """A Hub listing's bound: the stored weights alone, no file read."""
    LOAD = "load"
    """vramscope's per-engine load (`Answer.load`) against the same available memory."""


@dataclass(frozen=True)
class Verdict:
    """Whether it fits, by how much, and held against what."""

    scope: Scope
    fits: bool | None
    """None: no verdict (the split cannot be made, no calibration applies, a bound that
    does not already overflow)."""
    bytes: int = 0
    """The slack when it fits, the overflow when it does not (0 without a verdict)."""
    ranks: int = 1
    failing_ranks: tuple[int, ...] = ()
    """A plan's ranks over their own memory."""

    @classmethod
    def of_estimate(cls, est: MemoryEstimate, scope: Scope = Scope.DEVICE) -> Verdict:
        """mlxcel's verdict of one estimate (`fits`, its slack or overflow)."""
        return cls(scope, est.fits, est.slack_bytes if est.fits else est.overflow_bytes)

    @classmethod
    def of_total(cls, total: int, available: int, scope: Scope) -> Verdict:
        """A total held against the available memory (the calibrated one, a bound)."""
        fits = total <= available
        return cls(scope, fits, available - total if fits else total - available)

    @classmethod
    def of_rank(cls, rank: RankEstimate) -> Verdict:
        """One rank of a split: its peak (the load's or the run's) against its memory."""
        fits = rank.fits
        return cls(Scope.DEVICE, fits, rank.slack_bytes if fits else rank.overflow_bytes)

    @classmethod
    def of_plan(cls, ranks: Sequence[RankEstimate]) -> Verdict:
        """Every rank within its own memory; the fullest rank's slack or the failing
        ranks' largest overflow. No ranks: no verdict (the split cannot be made)."""
        if not ranks:
            return cls(Scope.PLAN, None)
        failing = tuple(r.rank for r in ranks if not r.fits)
        if failing:
            over = max(r.overflow_bytes for r in ranks if not r.fits)
            return cls(Scope.PLAN, False, over, len(ranks), failing)
        return cls(Scope.PLAN, True, min(r.slack_bytes for r in ranks), len(ranks))


def verdict_words(verdict: Verdict, *, detail: bool = False) -> str:
    """The verdict in words, "" when there is none.

    `FITS` / `DOES NOT FIT` (one device, the calibrated total), `PLAN FITS` / `PLAN
    DOES NOT FIT` (a split), `≈ DOES NOT FIT` (a bound that already overflows). With
    `detail`: a rank's `OVER 1.20 GiB`, a plan's `PLAN FITS: all 2 ranks` / `PLAN DOES
    NOT FIT: rank 1`.
    """
    if verdict.fits is None:
        return ""
    if verdict.scope is Scope.BOUND:
        return f"{BOUND_MARK} DOES NOT FIT" if not verdict.fits else ""
    if verdict.scope is Scope.PLAN:
        if not detail:
            return "PLAN FITS" if verdict.fits else "PLAN DOES NOT FIT"
        if verdict.fits:
            return f"PLAN FITS: all {verdict.ranks} ranks"
        return "PLAN DOES NOT FIT: rank " + ", ".join(str(r) for r in verdict.failing_ranks)
    if detail and not verdict.fits:
        return f"OVER {format_bytes_short(verdict.bytes)}"
    return "FITS" if verdict.fits else "DOES NOT FIT"


NO_VERDICT = "no verdict (memory not read)"
"""A load's verdict cell when the available memory was never read."""


def load_verdict_words(verdict: Verdict) -> str:
    """A load's verdict (`inspect`'s load line, `fit`'s GGUF rows): `FITS`, `DOES NOT
    FIT`, or `NO_VERDICT`."""
    return verdict_words(verdict) or NO_VERDICT


def amount_words(verdict: Verdict) -> str:
    """The slack or overflow: `69.52 GiB (74,642,249,216 bytes) free` or `… over`.

    mlxcel's banner says "of headroom" / "over budget" (its words, kept in
    `core.estimate.report`); here "free" and "over", so that "headroom" is not confused
    with the allocator's overhead factor (issue #17)."""
    size = f"{format_bytes_short(verdict.bytes)} ({verdict.bytes:,} bytes)"
    return f"{size} free" if verdict.fits else f"{size} over"
