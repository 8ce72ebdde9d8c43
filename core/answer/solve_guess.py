"""The largest fitting context in about a dozen estimates instead of thirty-four.

`core.answer.solve.largest_fitting_context` bisects [0, 2^32]: 34 estimates per
answer, which is most of `vramscope fit`'s time over 500 models x 3 quantizations.
Here the total's slope between 64 Ki and 128 Ki tokens (past the activation's
512-token cap) guesses the boundary, a gallop from the guess brackets it, and a
bisection closes the bracket. The answer is the same integer: the bracket keeps
the invariant `fits(good) and not fits(bad)` throughout, so a poor guess costs
calls, never exactness; a flat total (windowed attention) takes the full search.
"""

from __future__ import annotations

from dataclasses import replace

from core.answer.solve import CONTEXT_SEARCH_LIMIT, FitLimit, largest_fitting_context
from core.estimate.estimate import EstimateSettings, Workload, estimate
from core.estimate.snapshot import ModelSnapshot

_PROBES = (1 << 16, 1 << 17)
_FIRST_STEP = 256


def largest_context(
    model: ModelSnapshot, workload: Workload, settings: EstimateSettings
) -> FitLimit:
    """`largest_fitting_context(model, workload, settings)`, in fewer estimates."""
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
