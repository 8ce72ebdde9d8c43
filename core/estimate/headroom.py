"""The allocator-overhead term: a factor on weights + KV (`MLXCEL_HEADROOM_FACTOR`).

mlxcel calibrated 1.20 on Apple Silicon, where peak / (weights + KV) clustered in
1.10-1.25. The factor scales with weights, which is why ROCm keeps 1.20 and adds
the in-flight budget as a separate term instead of raising it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.display_text import shorten
from core.numbers import parse_rust_f64, rust_trim
from core.units import U64_MAX, f64_to_u64

HEADROOM_FACTOR_ENV = "MLXCEL_HEADROOM_FACTOR"
DEFAULT_HEADROOM_FACTOR = 1.20


@dataclass(frozen=True)
class FloatSetting:
    """A float read from the environment, with the warning due when it fell back."""

    value: float
    warning: str | None = None


def resolve_positive_float(raw: str | None, name: str, default: float) -> FloatSetting:
    """Parse a finite, positive float as mlxcel does; anything else is the default."""
    if raw is None:
        return FloatSetting(default)
    value = parse_rust_f64(rust_trim(raw))
    if value is None:
        why = "not a number"
    elif not math.isfinite(value):
        why = "not finite"
    elif value <= 0.0:
        why = "not positive"
    else:
        return FloatSetting(value)
    return FloatSetting(default, f'ignoring {name}="{shorten(raw)}" ({why}); using {default:g}')


def resolve_headroom_factor(raw: str | None) -> FloatSetting:
    """The factor from a raw `MLXCEL_HEADROOM_FACTOR` value (unset means 1.20)."""
    return resolve_positive_float(raw, HEADROOM_FACTOR_ENV, DEFAULT_HEADROOM_FACTOR)


def headroom_product(base: int, factor: float) -> float | None:
    """`float(base) * (factor - 1.0)` in IEEE double, or None for factors at or below 1."""
    if not math.isfinite(factor) or factor <= 1.0:
        return None
    return float(base) * (factor - 1.0)


def headroom_overflows(base: int, factor: float) -> bool:
    """True when the factor's product overflows a double (mlxcel then counts 0)."""
    x = headroom_product(base, factor)
    return x is not None and math.isinf(x)


def compute_runtime_headroom(base: int, factor: float) -> int:
    """mlxcel's `compute_runtime_headroom`: `trunc(min(x, U64_MAX))` with
    `x = float(base) * (factor - 1.0)`; 0 for factors at or below 1 and, as mlxcel
    checks `is_finite` first, 0 for a product that overflows (see `headroom_overflows`:
    callers say so in a warning line rather than change mlxcel's number).
    """
    x = headroom_product(base, factor)
    if x is None or not math.isfinite(x) or x < 0.0:
        return 0
    return f64_to_u64(min(x, float(U64_MAX)))


def headroom_overflow_warning(base: int, factor: float) -> str | None:
    """The one warning line due when the factor's product overflows, else None."""
    if not headroom_overflows(base, factor):
        return None
    return (
        f"{HEADROOM_FACTOR_ENV}={factor:g}: (weights + KV) x (factor - 1) overflows a double; "
        "mlxcel then counts 0 bytes of allocator overhead, and so does this estimate"
    )
