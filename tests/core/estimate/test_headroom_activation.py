"""The factor term (MLXCEL_HEADROOM_FACTOR) and the activation term (MLXCEL_ACTIVATION_MULT)."""

from __future__ import annotations

import math

import pytest

from core.estimate.activation import compute_activation_bytes, resolve_activation_mult
from core.estimate.headroom import compute_runtime_headroom, resolve_headroom_factor
from core.model.config import ActivationDims, ModelConfig
from core.units import MIB, U64_MAX


@pytest.mark.parametrize("factor", [1.0, 0.5, -1.0, math.nan, math.inf])
def test_headroom_is_zero_at_or_below_one_and_for_non_finite(factor: float) -> None:
    assert compute_runtime_headroom(1024, factor) == 0


def test_default_factor_truncates_the_double_product() -> None:
    # 1.2 - 1.0 == 0.19999999999999996 in double, so 20% of 100 MiB truncates one byte short.
    assert compute_runtime_headroom(100 * MIB, 1.20) == 20_971_519
    assert compute_runtime_headroom(4_618_067_968, 1.20) == 923_613_593


def test_headroom_saturates() -> None:
    assert compute_runtime_headroom(U64_MAX, 1e10) == U64_MAX


@pytest.mark.parametrize(
    ("raw", "expected", "warned"),
    [
        (None, 1.20, False),
        ("1.5", 1.5, False),
        (" 1.3 ", 1.3, False),
        ("+1.2", 1.2, False),
        (".5", 0.5, False),
        ("5.", 5.0, False),
        ("1.2e0", 1.2, False),
        ("0.5", 0.5, False),  # accepted, stored, and then gives no overhead
        ("", 1.20, True),
        ("1_2", 1.20, True),
        ("1.2x", 1.20, True),
        ("0", 1.20, True),
        ("-2", 1.20, True),
        ("NaN", 1.20, True),
        ("inf", 1.20, True),
    ],
)
def test_headroom_factor_env(raw: str | None, expected: float, warned: bool) -> None:
    setting = resolve_headroom_factor(raw)
    assert setting.value == expected
    assert (setting.warning is not None) == warned
    if warned:
        assert "MLXCEL_HEADROOM_FACTOR" in (setting.warning or "")
        assert "using 1.2" in (setting.warning or "")


@pytest.mark.parametrize(
    ("raw", "expected", "warned"),
    [
        (None, 2.0, False),
        ("3", 3.0, False),
        ("0", 2.0, True),
        ("abc", 2.0, True),
        ("-1", 2.0, True),
        ("inf", 2.0, True),
    ],
)
def test_activation_mult_env(raw: str | None, expected: float, warned: bool) -> None:
    setting = resolve_activation_mult(raw)
    assert (setting.value, setting.warning is not None) == (expected, warned)


def test_activation_is_streaming_plus_logits() -> None:
    dims = ActivationDims(4096, 11008, 32000)
    assert compute_activation_bytes(dims, 8192, 1, 2.0) == 30_996_992


@pytest.mark.parametrize(
    ("dims", "expected"),
    [
        (ActivationDims(4096, 14336, 128256), 38_005_248),  # Llama-3.1-8B
        (ActivationDims(3584, 18944, 152064), 46_441_472),  # Qwen2.5-7B
        (ActivationDims(2048, 6144, 151936), 17_081_088),  # Qwen3-30B-A3B
    ],
)
def test_activation_of_the_measured_models(dims: ActivationDims, expected: int) -> None:
    for ctx in (512, 640, 4096, 131072):
        assert compute_activation_bytes(dims, ctx, 1, 2.0) == expected


def test_activation_scales_with_batch_and_caps_at_512_tokens() -> None:
    dims = ActivationDims(2048, 5632, 50000)
    assert compute_activation_bytes(dims, 4096, 4, 2.0) == 4 * compute_activation_bytes(
        dims, 4096, 1, 2.0
    )
    no_vocab = ActivationDims(2048, 5632, 0)
    a = compute_activation_bytes
    assert a(no_vocab, 8192, 1, 2.0) == a(no_vocab, 32768, 1, 2.0)
    assert a(no_vocab, 256, 1, 2.0) * 2 == a(no_vocab, 8192, 1, 2.0)
    assert a(no_vocab, 0, 1, 2.0) == a(no_vocab, 1, 1, 2.0)  # clamped to at least one token


def test_activation_is_zero_without_hidden_size() -> None:
    assert compute_activation_bytes(None, 8192, 1, 2.0) == 0


def test_activation_dims_defaults() -> None:
    dims = ModelConfig.from_dict({"hidden_size": 1024}).activation_dims()
    assert dims == ActivationDims(1024, 4096, 0)
    nested = ModelConfig.from_dict(
        {"text_config": {"hidden_size": 8, "intermediate_size": 16, "vocab_size": 4}}
    )
    assert nested.activation_dims() == ActivationDims(8, 16, 4)
    assert ModelConfig.from_dict({"hidden_size": 4096.0}).activation_dims() is None
