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


def compute_runtime_headroom(base: int, factor: float) -> int:
    """`trunc(float(base) * (factor - 1.0))`, or 0 for factors at or below 1.

    A product that overflows to infinity saturates at `U64_MAX`, as Rust's
    `as u64` does. mlxcel returns 0 there (it checks `is_finite` first), which
    would let `MLXCEL_HEADROOM_FACTOR=1e305` report a huge model as fitting;
    issue 8 chose the saturated figure (docs/estimate.md, "Deliberate differences").
    """
    if not math.isfinite(factor) or factor <= 1.0:
        return 0
    x = float(base) * (factor - 1.0)
    if math.isnan(x) or x < 0.0:
        return 0
    return f64_to_u64(min(x, float(U64_MAX)))
