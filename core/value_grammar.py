"""vramscope's one grammar for a typed token count or byte size: every CLI flag and
every explorer box that takes one reads it here, so `32k` means the same in both.

The unit table (case-insensitive, binary throughout, as mlxcel's `MLXCEL_*_LIMIT`
variables read their suffixes, so `--memory-limit 24GB` is `MLXCEL_MEMORY_LIMIT=24GB`):

| kind | units | value |
|---|---|---|
| tokens | none, `k`, `m` | 1, 1024, 1024^2: `32k` = 32,768, `128K` = 131,072, `1.5k` = 1,536 |
| bytes | none or `B` | 1 |
| bytes | `K`, `KB`, `KiB` | 2^10 |
| bytes | `M`, `MB`, `MiB` | 2^20 |
| bytes | `G`, `GB`, `GiB` | 2^30 (`GB` is mlxcel's binary GB, not the decimal 10^9) |
| bytes | `T`, `TB`, `TiB` | 2^40 |

There is no decimal (10^9) unit: 24 x 10^9 bytes is typed as `24000000000`. Digits
may be grouped with `,` or `_` (`8,192`). A token count must come out whole (`1.1k`
is refused); a size in a unit drops a fraction of a byte, as mlxcel's `parse_memory_size`
does (`4.1GB` = 4,402,341,478), and a bare fraction (`1.5`, `1.5B`) is refused, as mlxcel
refuses `MLXCEL_MEMORY_LIMIT=1.5`. A reading is refused, never clamped or sign-stripped, when
it is empty, negative, not a number, in an unknown unit or out of range; the
refusal is a one-line reason.

mlxcel's own parsers (the environment variables, `--inflight-mb` as `strtoull`) keep
their rules: they live beside the terms they feed (`core.memory_size`,
`core.estimate.inflight`), not here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from core.display_text import cap_echoes, clean_text
from core.units import U64_MAX

TOKEN_UNITS: dict[str, int] = {"": 1, "k": 1 << 10, "m": 1 << 20}
SIZE_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    **{f"{p}{s}": 1 << (10 * n) for n, p in enumerate("kmgt", 1) for s in ("", "b", "ib")},
}

# A sign is matched so that `-5` is refused as negative, not as "not a number".
_FORM = re.compile(
    r"(?P<sign>[+-]?)\s*(?P<num>[0-9][0-9,_]*(?:\.[0-9]*)?|\.[0-9]+)\s*(?P<unit>[a-z]*)",
    re.ASCII,
)
_MAX_CHARS = 64  # no grammar form is longer; a 5000-digit value is refused by length


@dataclass(frozen=True)
class Refused:
    """Why a text is not a value of its kind, in one line (`must not be negative`)."""

    reason: str


def _shown(text: str) -> str:
    return clean_text(text.strip())


def _refused(reason: str) -> Refused:
    # A long echo is cut with its length (`'999…` (5,002 characters)), never in full.
    return Refused(cap_echoes(reason))


def _scaled(
    text: str, units: dict[str, int], kind: str, example: str, said: str
) -> Decimal | Refused:
    if not text.strip():
        return _refused(f"is empty; expected {kind}, e.g. {example}")
    if len(text.strip()) > _MAX_CHARS:
        head, length = _shown(text)[:24], len(text.strip())
        return _refused(f"'{head}…' ({length:,} characters) is too long to be {kind}")
    m = _FORM.fullmatch(text.strip().lower())
    if m is None:
        return _refused(f"'{_shown(text)}' is not {kind} (e.g. {example})")
    if m.group("unit") not in units:
        return _refused(f"'{_shown(m.group('unit'))}' is not a unit: use {said}")
    try:
        number = Decimal(m.group("num").replace(",", "").replace("_", ""))
    except InvalidOperation:
        return _refused(f"'{_shown(text)}' is not {kind} (e.g. {example})")
    if m.group("sign") == "-" and number != 0:
        return _refused(f"must not be negative, got '{_shown(text)}'")
    return number * units[m.group("unit")]


def _in_range(value: int, minimum: int, maximum: int, unit: str, text: str) -> int | Refused:
    if value < minimum:
        least = "more than 0" if minimum == 1 else f"at least {minimum:,}"
        return _refused(f"must be {least} {unit}, got '{_shown(text)}'")
    if value > maximum:
        return _refused(f"must be at most {maximum:,} {unit}, got '{_shown(text)}'")
    return value


def read_token_count(text: str, minimum: int = 0, maximum: int = U64_MAX) -> int | Refused:
    """`8192`, `8,192`, `32k`, `1.5k`, `128K`, `1m` (k = 1024) in [`minimum`, `maximum`]."""
    value = _scaled(text, TOKEN_UNITS, "a token count", "8192, 32k or 1.5k", "k or m (x1024)")
    if isinstance(value, Refused):
        return value
    if value != value.to_integral_value():
        return _refused(f"'{_shown(text)}' is not a whole number of tokens")
    return _in_range(int(value), minimum, maximum, "tokens", text)


def read_byte_size(text: str, minimum: int = 0, maximum: int = U64_MAX) -> int | Refused:
    """`24GB`, `24GiB`, `512M`, `1.5G`, `1073741824` (binary units) in bytes, in
    [`minimum`, `maximum`]; a fraction of a byte is dropped, as mlxcel drops it."""
    value = _scaled(
        text,
        SIZE_UNITS,
        "a size",
        "24GB, 24GiB, 512M or 1073741824",
        "K, M, G or T (x1024), alone or with B or iB",
    )
    if isinstance(value, Refused):
        return value
    if value != value.to_integral_value() and _unit(text) in ("", "b"):
        # mlxcel reads a bare number as whole bytes and refuses `1.5` outright: a fraction
        # of a byte is not a size (`1.5GB`, in a unit, drops only the byte's fraction).
        return _refused(
            f"'{_shown(text)}' is not a whole number of bytes; give a unit (e.g. "
            f"{_shown(text)}GB) or whole bytes, as MLXCEL_MEMORY_LIMIT reads it"
        )
    return _in_range(int(value), minimum, maximum, "bytes", text)


def _unit(text: str) -> str:
    m = _FORM.fullmatch(text.strip().lower())
    return m.group("unit") if m is not None else ""
