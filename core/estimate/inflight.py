"""The ROCm backend in-flight term (`MLX_ROCM_MAX_INFLIGHT_MB`).

MLX's ROCm backend lets committed but unfinished command batches hold up to this
many MiB of transients (mostly the f16 weight copies of the dequantize-and-GEMM
path during prefill) before the host waits. mlxcel reserves the whole budget as
its own term on ROCm builds. The parser mirrors the overlay's C++
`max_inflight_bytes()`: `strtoull(e, &end, 10)` with checks for `end == e`,
trailing bytes, `ERANGE`, a leading `-` and `v > SIZE_MAX >> 20`, each falling
back to the default.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.display_text import shorten
from core.kind import Kind
from core.numbers import decimal_to_int
from core.units import MIB, U64_MAX

ROCM_MAX_INFLIGHT_ENV = "MLX_ROCM_MAX_INFLIGHT_MB"
ROCM_DEFAULT_MAX_INFLIGHT_MB = 1024
MAX_ACCEPTED_INFLIGHT_MB = U64_MAX >> 20  # 17,592,186,044,415: survives `<< 20`

_C_WHITESPACE = " \t\n\x0b\x0c\r"
_DIGITS = frozenset("0123456789")


def parse_inflight_mb(raw: str | None) -> int | None:
    """The budget in MiB that the overlay would use, or None where it falls back.

    None means "invalid: the overlay uses the default". Unset and empty are not
    invalid; they return the default directly.
    """
    if raw is None or raw == "":
        return ROCM_DEFAULT_MAX_INFLIGHT_MB
    if raw[0] == "-":
        return None
    i = 0
    while i < len(raw) and raw[i] in _C_WHITESPACE:
        i += 1
    negative = False
    if i < len(raw) and raw[i] in "+-":
        negative = raw[i] == "-"
        i += 1
    digits = raw[i:]
    if not digits or not all(c in _DIGITS for c in digits):
        return None  # nothing parsed (`end == e`) or trailing bytes (`*end != '\0'`)
    magnitude = decimal_to_int(digits)
    if magnitude is None or magnitude > U64_MAX:
        return None  # ERANGE
    value = (-magnitude) % (1 << 64) if negative else magnitude  # strtoull negates mod 2^64
    if value > MAX_ACCEPTED_INFLIGHT_MB:
        return None
    return value


def rocm_inflight_reserve_bytes(raw: str | None) -> int:
    """mlxcel's `rocm_inflight_reserve_bytes`: the reserve in bytes for a raw setting."""
    mib = parse_inflight_mb(raw)
    return (ROCM_DEFAULT_MAX_INFLIGHT_MB if mib is None else mib) * MIB


class InflightOrigin(Kind):
    """Where an in-flight budget came from; the word names the setting in warnings."""

    DEFAULT = "default"
    ENV = ROCM_MAX_INFLIGHT_ENV
    FLAG = "--inflight-mb"
    REQUEST = "request"
    """A measurement's own request (`hip_backend`'s launcher)."""


@dataclass(frozen=True)
class InflightBudget:
    """A resolved in-flight budget and where it came from."""

    mib: int
    """Budget in MiB (0 = bound off, nothing reserved)."""
    origin: InflightOrigin
    raw: str | None = None
    """The text as given, when it was given."""
    invalid: bool = False
    """True when `raw` was rejected and the default taken instead."""

    @property
    def bytes(self) -> int:
        """The reserve in bytes (`mib << 20`)."""
        return self.mib * MIB

    def warning(self) -> str | None:
        """The overlay's one-line warning for a rejected value, else None."""
        if not self.invalid:
            return None
        return (
            f'ignoring invalid {self.origin}="{shorten(self.raw or "")}" (expected a non-negative '
            f"integer of MiB); using {ROCM_DEFAULT_MAX_INFLIGHT_MB}"
        )


def resolve_inflight_budget(
    raw: str | None, origin: InflightOrigin = InflightOrigin.ENV
) -> InflightBudget:
    """Resolve a raw setting through the overlay's parser, noting a fallback."""
    if raw is None or raw == "":
        return InflightBudget(ROCM_DEFAULT_MAX_INFLIGHT_MB, InflightOrigin.DEFAULT, raw)
    mib = parse_inflight_mb(raw)
    if mib is None:
        return InflightBudget(ROCM_DEFAULT_MAX_INFLIGHT_MB, origin, raw, invalid=True)
    return InflightBudget(mib, origin, raw)
