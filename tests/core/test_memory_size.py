"""The MLXCEL_MEMORY_LIMIT size grammar (spec section 1.4)."""

from __future__ import annotations

import pytest

from core.memory_size import parse_memory_size, parse_optional_memory_size
from core.numbers import parse_rust_f64, parse_rust_u64, rust_trim
from core.units import U64_MAX

SIZES = [
    ("64GB", 68_719_476_736),
    ("128gb", 137_438_953_472),
    ("512MB", 536_870_912),
    ("1073741824", 1_073_741_824),
    ("1.5GB", 1_610_612_736),
    ("4.1GB", 4_402_341_478),
    ("0.5M", 524_288),
    ("4G", 4_294_967_296),
    ("4GB", 4_294_967_296),
    ("4gb", 4_294_967_296),
    (" 4 GB ", 4_294_967_296),
    ("512M", 536_870_912),
    ("512mb", 536_870_912),
    ("8K", 8192),
    ("8KB", 8192),
    ("1024", 1024),
    ("1e30GB", U64_MAX),
    ("0", 0),
    ("+5", 5),
    (".5G", 536_870_912),
]


@pytest.mark.parametrize(("text", "expected"), SIZES)
def test_parse_memory_size(text: str, expected: int) -> None:
    assert parse_memory_size(text) == expected


@pytest.mark.parametrize(
    "text", ["-1GB", "NaNGB", "infGB", "abc", "GB", "1.5", "1_000", "1 000", "", "0x10", "١٢"]
)
def test_parse_memory_size_rejects(text: str) -> None:
    assert parse_memory_size(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", None),
        ("none", None),
        ("NONE", None),
        ("-1GB", None),
        ("NaNGB", None),
        ("0GB", None),
        ("", None),
        ("1.5GB", 1_610_612_736),
        ("8K", 8192),
        ("4G", 4_294_967_296),
        ("512M", 536_870_912),
        ("1024", 1024),
    ],
)
def test_preflight_wrapper(text: str, expected: int | None) -> None:
    assert parse_optional_memory_size(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1.2", 1.2), ("+1.2", 1.2), (".5", 0.5), ("5.", 5.0), ("1.2e0", 1.2), ("1E3", 1000.0)],
)
def test_rust_f64_accepts(text: str, expected: float) -> None:
    assert parse_rust_f64(text) == expected


@pytest.mark.parametrize("text", ["", "1_2", "1.2x", " 1.2", "e5", ".", "+", "0x1p3", "١"])
def test_rust_f64_rejects_what_python_float_may_accept(text: str) -> None:
    assert parse_rust_f64(text) is None


def test_rust_f64_special_values() -> None:
    for text in ("inf", "Infinity", "-INF", "NaN", "nan"):
        value = parse_rust_f64(text)
        assert value is not None
        assert value != value or abs(value) == float("inf")


def test_rust_u64_and_trim() -> None:
    assert parse_rust_u64("18446744073709551615") == U64_MAX
    assert parse_rust_u64("18446744073709551616") is None
    assert parse_rust_u64("-1") is None
    assert rust_trim("\u3000 5\t") == "5"
    assert rust_trim("\x1c5") == "\x1c5"  # Python's strip() would remove U+001C; Rust keeps it
