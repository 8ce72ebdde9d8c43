"""Unsigned 64-bit arithmetic and byte formatting, exactly as mlxcel does them.

mlxcel computes every term on Rust `u64` with saturating adds and multiplies, and
converts floats with `as u64` (fraction dropped, negatives and NaN to 0, overflow to
`u64::MAX`). Python integers never overflow, so each step clamps explicitly.
"""

from __future__ import annotations

import math

U64_MAX = (1 << 64) - 1
MIB = 1 << 20
GIB = 1 << 30


def sat_add(*values: int) -> int:
    """Saturating sum of non-negative integers at `U64_MAX`."""
    return min(sum(values), U64_MAX)


def sat_mul(*values: int) -> int:
    """Saturating product of non-negative integers at `U64_MAX`."""
    product = 1
    for value in values:
        if value == 0:
            return 0
        product *= value
        if product > U64_MAX:
            product = U64_MAX + 1  # keep the number small; any zero factor still wins
    return min(product, U64_MAX)


def sat_sub(a: int, b: int) -> int:
    """Saturating difference at 0."""
    return a - b if a > b else 0


def f64_to_u64(x: float) -> int:
    """Rust's `x as u64`: truncate, NaN and negatives to 0, large values to `U64_MAX`."""
    if math.isnan(x) or x <= 0.0:
        return 0
    if x >= 18446744073709551616.0:  # 2**64
        return U64_MAX
    return int(x)


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling division of non-negative values."""
    return -(-a // b)


def format_bytes(b: int) -> str:
    """mlxcel's `format_bytes`: binary units with the exact byte count in brackets."""
    if b >= GIB:
        return f"{b / GIB:.2f} GiB ({b} bytes)"
    if b >= MIB:
        return f"{b / MIB:.1f} MiB ({b} bytes)"
    return f"{b} bytes"


def format_bytes_short(b: int) -> str:
    """A compact binary-unit label for tables and bars (not part of mlxcel's output)."""
    if b >= GIB:
        return f"{b / GIB:.2f} GiB"
    if b >= MIB:
        return f"{b / MIB:.1f} MiB"
    if b >= 1024:
        return f"{b / 1024:.1f} KiB"
    return f"{b} B"
