"""Inverse questions over the estimate: the largest context and in-flight budget that fit.

mlxcel answers "does this fit?"; the explorer also answers "how far can I go?".
Both answers come from an exact integer search over the real `estimate()`, not
from a re-derived formula, so they agree with the banner to the byte: at the
answer the verdict is FITS, one token (or one MiB) more and it is DOES NOT FIT.
The search relies on the total being non-decreasing in each input, which holds
term by term (KV rounds the context up and windows cap it, activation caps the
prefill at 512 tokens, the overhead is a truncated product of W + K, and every
sum saturates).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from core.estimate.estimate import EstimateSettings, Workload, estimate
from core.estimate.inflight import MAX_ACCEPTED_INFLIGHT_MB
from core.estimate.snapshot import ModelSnapshot
from core.units import MIB

CONTEXT_SEARCH_LIMIT = 1 << 32
"""Contexts are searched up to 4,294,967,296 tokens; beyond that "it always fits"."""


@dataclass(frozen=True)
class FitLimit:
    """The largest value of one input at which the estimate still fits."""

    value: int | None
    """The largest fitting value, or None when even the smallest value does not fit."""
    unbounded: bool = False
    """True when the search's upper bound still fits (the total stops growing)."""


def largest_fitting(fits: Callable[[int], bool], lo: int, hi: int) -> FitLimit:
    """The largest `x` in `[lo, hi]` with `fits(x)`, for a `fits` that is true up to a point.

    Args:
        fits: A predicate that is true on `[lo, x]` and false above `x`.
        lo: The smallest value to consider.
        hi: The largest value to consider.

    Returns:
        The boundary; `unbounded` when `fits(hi)` already holds.
    """
    if not fits(lo):
        return FitLimit(None)
    if fits(hi):
        return FitLimit(hi, unbounded=True)
    good, bad = lo, hi  # invariant: fits(good) and not fits(bad)
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return FitLimit(good)


def largest_fitting_context(
    model: ModelSnapshot,
    workload: Workload,
    settings: EstimateSettings,
    *,
    limit: int = CONTEXT_SEARCH_LIMIT,
) -> FitLimit:
    """The largest `max_tokens` that fits, all other inputs as given."""

    def fits(tokens: int) -> bool:
        return estimate(model, replace(workload, max_tokens=tokens), settings).fits

    return largest_fitting(fits, 0, limit)


def largest_fitting_inflight(
    model: ModelSnapshot, workload: Workload, settings: EstimateSettings
) -> FitLimit | None:
    """The largest in-flight budget (MiB) that fits; None off ROCm, where it is not counted."""
    if not settings.backend.has_inflight_reserve:
        return None

    def total(mib: int) -> int:
        return estimate(model, workload, replace(settings, inflight_mib=mib)).total_bytes

    def fits(mib: int) -> bool:
        return total(mib) <= available

    # The total holds the budget itself (mib x MiB, in a saturating sum), so no budget
    # above the available memory fits: the search ends there, not at 2^44 MiB. The
    # answer is the same; the explorer's every key ran 46 estimates for it, then 18.
    available = settings.available.bytes
    hi = min(MAX_ACCEPTED_INFLIGHT_MB, available // MIB + 1)
    # The same sum gives the boundary outright, (available - total at 0) // MiB: three
    # estimates check it (it fits, one MiB more does not). Where they do not agree (a
    # saturated sum), the bisection answers, as before.
    base = total(0)
    if base > available:
        return FitLimit(None)
    guess = (available - base) // MIB
    if guess < hi and fits(guess) and not fits(guess + 1):
        return FitLimit(guess)
    return largest_fitting(fits, 0, hi)


# -- the largest context in about a dozen estimates (`largest_context`) ----------------
#
# The largest fitting context in about a dozen estimates instead of thirty-four.
#
# `core.answer.solve.largest_fitting_context` bisects [0, 2^32]: 34 estimates per
# answer, which is most of `vramscope fit`'s time over 500 models x 3 quantizations.
# Here the total's slope between 64 Ki and 128 Ki tokens (past the activation's
# 512-token cap) guesses the boundary, a gallop from the guess brackets it, and a
# bisection closes the bracket. The answer is the same integer: the bracket keeps
# the invariant `fits(good) and not fits(bad)` throughout, so a poor guess costs
# calls, never exactness; a flat total (windowed attention) takes the full search.

_PROBES = (1 << 16, 1 << 17)
_FIRST_STEP = 256


_last_context: tuple[ModelSnapshot, Workload, EstimateSettings, FitLimit] | None = None
"""The last answer, by its model (the same object) and the inputs other than the context
itself: the explorer's token keys ask the same question with another context each time."""


def largest_context(
    model: ModelSnapshot, workload: Workload, settings: EstimateSettings
) -> FitLimit:
    """`largest_fitting_context(model, workload, settings)`, in fewer estimates (none
    when only `workload.max_tokens` changed since the last call: it is searched over)."""
    global _last_context
    asked = replace(workload, max_tokens=0)
    last = _last_context
    if last is not None and last[0] is model and last[1] == asked and last[2] == settings:
        return last[3]
    found = _largest_context(model, workload, settings)
    _last_context = (model, asked, settings, found)
    return found


def _largest_context(
    model: ModelSnapshot, workload: Workload, settings: EstimateSettings
) -> FitLimit:
    limit = CONTEXT_SEARCH_LIMIT

    def total(tokens: int) -> int:
        return estimate(model, replace(workload, max_tokens=tokens), settings).total_bytes

    available = settings.available.bytes
    if total(0) > available:
        return FitLimit(None)
    if total(limit) <= available:
        return FitLimit(limit, unbounded=True)
    a, b = _PROBES
    ta, tb = total(a), total(b)
    if tb <= ta:
        return largest_fitting_context(model, workload, settings)
    guess = min(max(int(a + (available - ta) * (b - a) / (tb - ta)), 1), limit - 1)
    step = _FIRST_STEP
    if total(guess) <= available:
        good = guess
        while True:
            nxt = good + step
            if nxt >= limit:
                bad = limit
                break
            if total(nxt) <= available:
                good, step = nxt, step * 2
            else:
                bad = nxt
                break
    else:
        bad = guess
        while True:
            nxt = bad - step
            if nxt <= 0:
                good = 0
                break
            if total(nxt) <= available:
                good = nxt
                break
            bad, step = nxt, step * 2
    while bad - good > 1:  # invariant: total(good) fits, total(bad) does not
        mid = (good + bad) // 2
        if total(mid) <= available:
            good = mid
        else:
            bad = mid
    return FitLimit(good)
