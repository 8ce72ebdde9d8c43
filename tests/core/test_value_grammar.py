"""vramscope's one grammar for token counts and sizes (core/value_grammar.py), form by form."""

from __future__ import annotations

from decimal import Decimal

import pytest

from core.memory_size import parse_memory_size
from core.units import GIB, MIB, U64_MAX
from core.value_grammar import Refused, read_byte_size, read_token_count


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("8192", 8192),
        ("8,192", 8192),
        ("8_192", 8192),
        ("32k", 32_768),
        ("32K", 32_768),
        ("128K", 131_072),
        ("1.5k", 1_536),
        (".5k", 512),
        ("32 k", 32_768),
        (" 640 ", 640),
        ("1m", 1_048_576),
        ("+5", 5),
        ("0", 0),
        ("-0", 0),
    ],
)
def test_token_counts_read_with_k_as_1024(text: str, tokens: int) -> None:
    assert read_token_count(text) == tokens


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("-5", "must not be negative, got '-5'"),
        ("-1k", "must not be negative, got '-1k'"),
        ("1.1k", "'1.1k' is not a whole number of tokens"),
        ("0.5", "'0.5' is not a whole number of tokens"),
        ("32kb", "'kb' is not a unit: use k or m (x1024)"),
        ("32g", "'g' is not a unit: use k or m (x1024)"),
        ("abc", "'abc' is not a token count (e.g. 8192, 32k or 1.5k)"),
        ("1e3", "'1e3' is not a token count (e.g. 8192, 32k or 1.5k)"),
        ("", "is empty; expected a token count, e.g. 8192, 32k or 1.5k"),
        ("5000000000", "must be at most 4,294,967,296 tokens, got '5000000000'"),
        ("4097m", "must be at most 4,294,967,296 tokens, got '4097m'"),
    ],
)
def test_token_counts_that_are_not_one_are_refused_with_the_reason(text: str, reason: str) -> None:
    assert read_token_count(text, 0, 1 << 32) == Refused(reason)


def test_the_range_is_checked_on_the_scaled_value() -> None:
    assert read_token_count("4m", 0, 4_000_000) == Refused(
        "must be at most 4,000,000 tokens, got '4m'"
    )


def test_a_token_count_under_the_minimum_is_refused_not_raised() -> None:
    assert read_token_count("0", minimum=1) == Refused("must be more than 0 tokens, got '0'")
    assert read_token_count("1", minimum=2) == Refused("must be at least 2 tokens, got '1'")


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("24GB", 24 * GIB),
        ("24GiB", 24 * GIB),
        ("24gib", 24 * GIB),
        ("24 G", 24 * GIB),
        ("512M", 512 * MIB),
        ("512MB", 512 * MIB),
        ("512MiB", 512 * MIB),
        ("8K", 8192),
        ("8KiB", 8192),
        ("1TB", 1 << 40),
        ("2TiB", 2 << 40),
        ("1.5GB", 1_610_612_736),
        ("4.1GB", 4_402_341_478),  # a fraction of a byte dropped, as mlxcel drops it
        ("1073741824", GIB),
        ("1,073,741,824", GIB),
        ("1024B", 1024),
        ("0", 0),
    ],
)
def test_sizes_read_in_binary_units(text: str, size: int) -> None:
    assert read_byte_size(text) == size


@pytest.mark.parametrize("text", ["64GB", "128gb", "512MB", "1.5GB", "4.1GB", "0.5M", "8K", "1024"])
def test_the_forms_mlxcel_reads_mean_the_bytes_mlxcel_reads(text: str) -> None:
    # `--memory-limit X` and `MLXCEL_MEMORY_LIMIT=X` agree wherever mlxcel takes X.
    assert read_byte_size(text) == parse_memory_size(text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("-1GB", "must not be negative, got '-1GB'"),
        ("-5", "must not be negative, got '-5'"),
        ("24XB", "'xb' is not a unit: use K, M, G or T (x1024), alone or with B or iB"),
        ("24 gigs", "'gigs' is not a unit: use K, M, G or T (x1024), alone or with B or iB"),
        ("GB", "'GB' is not a size (e.g. 24GB, 24GiB, 512M or 1073741824)"),
        ("infGB", "'infGB' is not a size (e.g. 24GB, 24GiB, 512M or 1073741824)"),
        ("NaNGB", "'NaNGB' is not a size (e.g. 24GB, 24GiB, 512M or 1073741824)"),
        ("1e30GB", "'1e30GB' is not a size (e.g. 24GB, 24GiB, 512M or 1073741824)"),
        ("", "is empty; expected a size, e.g. 24GB, 24GiB, 512M or 1073741824"),
        ("16777216TB", f"must be at most {U64_MAX:,} bytes, got '16777216TB'"),
    ],
)
def test_sizes_that_are_not_one_are_refused_never_clamped(text: str, reason: str) -> None:
    assert read_byte_size(text) == Refused(reason)


def test_a_size_of_0_is_refused_where_the_minimum_is_one_byte() -> None:
    assert read_byte_size("0GB", minimum=1) == Refused("must be more than 0 bytes, got '0GB'")


def test_a_5000_digit_value_is_refused_with_its_echo_cut() -> None:
    refused = read_byte_size("9" * 5000)
    assert isinstance(refused, Refused)
    assert refused.reason == f"'{'9' * 24}…' (5,000 characters) is too long to be a size"
    assert len(refused.reason) < 300


@pytest.mark.parametrize("text", ["1.5", "1.5B", "0.5", "2.25b"])
def test_a_bare_fraction_of_a_byte_is_refused_as_mlxcel_refuses_it(text: str) -> None:
    refused = read_byte_size(text)
    assert isinstance(refused, Refused)
    assert "not a whole number of bytes" in refused.reason
    assert read_byte_size(text.rstrip("Bb") + "GB") == int(Decimal(text.rstrip("Bb")) * 2**30)


def test_memory_limit_1_5_is_refused_by_the_command_not_read_as_1_byte(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tui.cli import main

    assert main(["inspect", "Qwen/Qwen2.5-7B-Instruct", "--memory-limit", "1.5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vramscope: error: --memory-limit: '1.5' is not a whole number")
