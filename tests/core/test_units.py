"""u64 saturation, float truncation and format_bytes."""

from __future__ import annotations

import math

import pytest

from core.units import GIB, MIB, U64_MAX, f64_to_u64, format_bytes, sat_add, sat_mul, sat_sub


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2 * GIB, "2.00 GiB (2147483648 bytes)"),
        (5 * MIB, "5.0 MiB (5242880 bytes)"),
        (42, "42 bytes"),
        (131072, "131072 bytes"),
        (MIB - 1, "1048575 bytes"),
        (GIB - 1, "1024.0 MiB (1073741823 bytes)"),
        (4_517_404_672, "4.21 GiB (4517404672 bytes)"),
        (923_613_593, "880.8 MiB (923613593 bytes)"),
        (82_463_372_083, "76.80 GiB (82463372083 bytes)"),
        (U64_MAX, "17179869184.00 GiB (18446744073709551615 bytes)"),
        (0, "0 bytes"),
    ],
)
def test_format_bytes(value: int, expected: str) -> None:
    assert format_bytes(value) == expected


def test_saturation() -> None:
    assert sat_add(U64_MAX, 1) == U64_MAX
    assert sat_mul(1 << 40, 1 << 40) == U64_MAX
    assert sat_mul(U64_MAX, U64_MAX, 0) == 0
    assert sat_sub(3, 5) == 0
    assert sat_add(1, 2, 3) == 6


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (1.9, 1),
        (-3.0, 0),
        (math.nan, 0),
        (math.inf, U64_MAX),
        (2.0**64, U64_MAX),
        (float(U64_MAX), U64_MAX),
        (0.0, 0),
        (2.0**63, 1 << 63),
    ],
)
def test_f64_to_u64_is_rust_as(x: float, expected: int) -> None:
    assert f64_to_u64(x) == expected
