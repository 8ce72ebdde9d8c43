"""The size grammar of `MLXCEL_MEMORY_LIMIT` (and the cache and wired limits).

One grammar for all of mlxcel's `*_LIMIT` variables: an optional binary suffix
(G/GB, M/MB, K/KB, any case) on a float, or a bare unsigned integer of bytes.
"""

from __future__ import annotations

import math

from core.numbers import parse_rust_f64, parse_rust_u64, rust_trim
from core.units import U64_MAX

_SUFFIXES: tuple[tuple[str, int], ...] = (
    ("GB", 1 << 30),
    ("G", 1 << 30),
    ("MB", 1 << 20),
    ("M", 1 << 20),
    ("KB", 1 << 10),
    ("K", 1 << 10),
)


def parse_memory_size(text: str) -> int | None:
    """mlxcel's `parse_memory_size`: bytes, or None when the text is not a size.

    `"1.5GB"` gives 1,610,612,736; `"1e30GB"` saturates to `U64_MAX`; `"1.5"` (a
    fraction without a suffix) and negative or non-finite values give None.
    """
    s = rust_trim(text).upper()
    for suffix, scale in _SUFFIXES:
        if s.endswith(suffix):
            value = parse_rust_f64(rust_trim(s[: -len(suffix)]))
            if value is None or not math.isfinite(value) or value < 0:
                return None
            scaled = math.floor(value * float(scale))
            return U64_MAX if scaled >= float(U64_MAX) else int(scaled)
    return parse_rust_u64(s)


def parse_optional_memory_size(text: str | None) -> int | None:
    """The preflight wrapper: empty, `0`, `none` or a size of 0 mean "unset" (None)."""
    if text is None:
        return None
    s = rust_trim(text)
    if s == "" or s == "0" or s.lower() == "none":
        return None
    size = parse_memory_size(s)
    return size if size else None


def is_explicitly_unset(text: str) -> bool:
    """True for the spellings that deliberately mean "no limit" (no warning due)."""
    s = rust_trim(text)
    if s == "" or s.lower() == "none":
        return True
    return parse_memory_size(s) == 0
