"""MLX_ROCM_MAX_INFLIGHT_MB parses exactly as the overlay's max_inflight_bytes()."""

from __future__ import annotations

import pytest

from core.estimate.inflight import (
    MAX_ACCEPTED_INFLIGHT_MB,
    InflightOrigin,
    parse_inflight_mb,
    resolve_inflight_budget,
    rocm_inflight_reserve_bytes,
)
from core.units import GIB, MIB, U64_MAX

# (raw value, expected reserve in bytes): spec section 6.2 and the list.
VECTORS = [
    (None, GIB),
    ("", GIB),
    ("0", 0),
    ("256", 256 * MIB),
    ("-1", GIB),
    ("8abc", GIB),
    ("1G", GIB),
    ("17592186044416", GIB),  # one past the largest value that survives << 20
    ("4096", 4 * GIB),
    ("+256", 256 * MIB),
    (" \t256", 256 * MIB),
    (" -0", 0),
    (" -5", GIB),
    ("256 ", GIB),
    (" ", GIB),
    ("+", GIB),
    ("0x10", GIB),
    ("99999999999999999999999", GIB),  # 23 digits: ERANGE
    ("18446744073709551616", GIB),  # 2^64: ERANGE
    ("17592186044415", 17592186044415 << 20),
    ("\n\x0b\x0c\r1", MIB),  # every C isspace character
    ("++1", GIB),
    ("+-1", GIB),
    ("1_000", GIB),
    ("٣", GIB),  # a non-ASCII digit
    ("00256", 256 * MIB),
]


@pytest.mark.parametrize(("raw", "expected"), VECTORS)
def test_reserve_matches_the_overlay(raw: str | None, expected: int) -> None:
    assert rocm_inflight_reserve_bytes(raw) == expected


def test_largest_accepted_value_is_u64_max_shifted() -> None:
    assert MAX_ACCEPTED_INFLIGHT_MB == U64_MAX >> 20 == 17_592_186_044_415
    assert rocm_inflight_reserve_bytes("17592186044415") == 18_446_744_073_708_503_040


@pytest.mark.parametrize("raw", ["-1", "8abc", "1G", "256 ", "0x10", "17592186044416"])
def test_rejected_values_fall_back_with_a_warning(raw: str) -> None:
    budget = resolve_inflight_budget(raw)
    assert budget.invalid
    assert budget.mib == 1024
    warning = budget.warning()
    assert warning is not None
    assert "\n" not in warning
    assert f'MLX_ROCM_MAX_INFLIGHT_MB="{raw}"' in warning
    assert "using 1024" in warning


@pytest.mark.parametrize(("raw", "mib"), [(None, 1024), ("", 1024), ("0", 0), (" -0", 0)])
def test_accepted_values_carry_no_warning(raw: str | None, mib: int) -> None:
    budget = resolve_inflight_budget(raw)
    assert (budget.mib, budget.invalid, budget.warning()) == (mib, False, None)


def test_flag_origin_is_named_in_the_warning() -> None:
    budget = resolve_inflight_budget("lots", InflightOrigin.FLAG)
    assert budget.warning() is not None
    assert '--inflight-mb="lots"' in (budget.warning() or "")


def test_parse_returns_none_only_for_fallbacks() -> None:
    assert parse_inflight_mb(None) == 1024
    assert parse_inflight_mb("-1") is None
    assert parse_inflight_mb("512") == 512
