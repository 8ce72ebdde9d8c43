"""Number grammars of the Rust standard library, reproduced for exact parsing.

Python's `float()` and `int()` accept underscores, surrounding whitespace and
non-ASCII digits; Rust's `str::parse` accepts none of them. Each helper here
accepts exactly what the Rust parse accepts and returns None otherwise.
"""

from __future__ import annotations

import re

from core.units import U64_MAX

# Rust `f64::from_str`: optional sign, then inf/infinity/nan (any case) or a decimal
# with optional fraction and exponent. ASCII digits only, no whitespace, no `_`.
_RUST_F64 = re.compile(
    r"[+-]?(?:(?i:inf|infinity|nan)|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
)
_RUST_U64 = re.compile(r"\+?[0-9]+")
U64_DIGITS = 20  # len(str(2**64 - 1)): more significant digits always overflow u64


def decimal_to_int(digits: str, max_digits: int = U64_DIGITS) -> int | None:
    """The value of a string of ASCII digits, or None past `max_digits` significant digits.

    Leading zeros are free, as in Rust's and C's parsers; converting only short
    strings keeps Python's integer-string limit (4300 digits) out of reach, so a
    5000-digit variable is "not a number", never a traceback.
    """
    significant = digits.lstrip("0")
    if len(significant) > max_digits:
        return None
    return int(significant) if significant else 0


def parse_rust_f64(text: str) -> float | None:
    """Parse like Rust's `text.parse::<f64>()`; None where Rust returns an error."""
    if not _RUST_F64.fullmatch(text):
        return None
    try:
        return float(text)
    except (ValueError, OverflowError):  # pragma: no cover - the regex admits only valid input
        return None


def parse_rust_u64(text: str) -> int | None:
    """Parse like Rust's `text.parse::<u64>()`: optional `+`, ASCII digits, no overflow."""
    if not _RUST_U64.fullmatch(text):
        return None
    value = decimal_to_int(text.removeprefix("+"))
    return value if value is not None and value <= U64_MAX else None


# Unicode White_Space, the set Rust's `str::trim` removes. Python's `str.strip()`
# also removes U+001C..U+001F, which Rust keeps.
_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def rust_trim(text: str) -> str:
    """Rust's `str::trim`: strip Unicode White_Space from both ends."""
    return text.strip(_WHITE_SPACE)
