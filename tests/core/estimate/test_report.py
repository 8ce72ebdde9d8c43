"""The text banner and the JSON report, byte for byte (spec section 7)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from core.backend import Backend
from core.catalog.model_dir import read_model_dir, resolve_weight_bytes
from core.estimate.estimate import QuantHint, Workload, estimate, parse_quant_hint
from core.estimate.report import (
    format_estimate,
    format_f64_like_serde,
    inspect_report,
    to_json_pretty,
)
from core.estimate.snapshot import snapshot_from_config
from core.units import format_bytes
from tests.core.helpers import LLAMA_4BIT, MINIMAL_CONFIG, settings

WORKED_EXAMPLE = """\
=== Memory Estimate ===
  Model:           models/mlx/Meta-Llama-3.1-8B-Instruct-4bit
  Context length:  640 tokens (batch = 1)
  Quant hint:      default (from config.json)
  KV dtype:        fp16

  Weights:         4.21 GiB (4517404672 bytes)  (safetensors header)
  KV cache:        96.0 MiB (100663296 bytes)  (standard attention (32 layers, full context))
                   (131072 bytes per token at steady state, same dtype)
  Activation:      36.2 MiB (38005248 bytes)  (batch 1 × ≤512 prefill tokens × (hidden+intermediate) + logits)
  Allocator ovhd:  880.8 MiB (923613593 bytes)  (factor 1.20x on weights+kv)
  Backend in-flight: 1.00 GiB (1073741824 bytes)  (MLX_ROCM_MAX_INFLIGHT_MB)
  -----
  Total estimate:  6.20 GiB (6653428633 bytes)
  Available:       76.80 GiB (82463372083 bytes)

  FITS: 70.60 GiB (75809943450 bytes) of headroom
"""  # noqa: E501


@pytest.fixture
def llama(skeleton: Callable[..., Path]):  # type: ignore[no-untyped-def]
    return read_model_dir(skeleton(LLAMA_4BIT), "models/mlx/Meta-Llama-3.1-8B-Instruct-4bit")


def test_worked_example_banner(llama) -> None:  # type: ignore[no-untyped-def]
    est = estimate(llama, Workload(640), settings())
    assert format_estimate(llama.display, est) == WORKED_EXAMPLE


def test_no_inflight_line_when_the_term_is_zero(llama) -> None:  # type: ignore[no-untyped-def]
    for s in (settings(inflight_mib=0), settings(backend=Backend.CUDA, inflight_mib=4096)):
        text = format_estimate("m", estimate(llama, Workload(640), s))
        assert "Backend in-flight" not in text
        assert "  Allocator ovhd:  880.8 MiB (923613593 bytes)" in text
        assert "  Total estimate:  5.20 GiB (5579686809 bytes)\n" in text


def test_budget_256_line(llama) -> None:  # type: ignore[no-untyped-def]
    text = format_estimate("m", estimate(llama, Workload(640), settings(inflight_mib=256)))
    assert "  Backend in-flight: 256.0 MiB (268435456 bytes)  (MLX_ROCM_MAX_INFLIGHT_MB)\n" in text


def test_does_not_fit_line(llama) -> None:  # type: ignore[no-untyped-def]
    est = estimate(llama, Workload(640), settings(available=6 * 1024**3))
    text = format_estimate("m", est)
    assert text.endswith(f"  DOES NOT FIT: {format_bytes(est.overflow_bytes)} over budget\n")
    assert "FITS:" not in text


def test_saturated_total_shows_the_overhead_as_mlxcel_does(llama) -> None:  # type: ignore[no-untyped-def]
    est = estimate(llama, Workload(640), settings(inflight_mib=17_592_186_044_415))
    text = format_estimate("m", est)
    # mlxcel prints runtime_headroom - A - I with saturating subtraction: the saturated
    # headroom leaves nothing for the factor line.
    assert est.runtime_headroom_bytes - est.activation_bytes < est.backend_inflight_bytes
    assert "  Allocator ovhd:  0 bytes  (factor 1.20x" in text
    assert "  Total estimate:  17179869184.00 GiB (18446744073709551615 bytes)\n" in text


def test_inputs_lines_and_unavailable_kv(model_dir) -> None:  # type: ignore[no-untyped-def]
    model = read_model_dir(model_dir({"vocab_size": 10}))
    est = estimate(
        model,
        Workload(256, batch=2, kv_int8=True, quant=QuantHint.INT4),
        settings(backend=Backend.CPU),
    )
    text = format_estimate("my model", est)
    lines = text.splitlines()
    assert lines[1] == "  Model:           my model"
    assert lines[2] == "  Context length:  256 tokens (batch = 2)"
    assert lines[3] == "  Quant hint:      int4"
    assert lines[4] == "  KV dtype:        int8"
    assert (
        lines[6]
        == "  Weights:         13.04 GiB (14000000000 bytes)  (fallback (7 B params assumed))"
    )
    assert lines[7] == (
        "  KV cache:        0 bytes  (unavailable (config.json missing architecture fields))"
    )
    assert lines[8].startswith("  Activation:      0 bytes  (batch 2 × ≤512")
    assert "per token" not in text


def test_quant_hint_aliases() -> None:
    assert parse_quant_hint("") is QuantHint.DEFAULT
    assert parse_quant_hint("float16") is QuantHint.FP16
    assert parse_quant_hint("I8") is QuantHint.INT8
    assert parse_quant_hint("INT8") is QuantHint.INT8
    assert parse_quant_hint("i4") is QuantHint.INT4
    with pytest.raises(ValueError, match="unknown value 'turbo3'"):
        parse_quant_hint("turbo3")
    assert "default" in QuantHint.DEFAULT.text_label


MLXCEL_KEYS = [
    "vramscope_version",
    "model",
    "model_type",
    "family",
    "inputs",
    "weights_bytes",
    "weights_source",
    "kv_bytes_per_token",
    "kv_bytes_total",
    "kv_detail",
    "per_slot_overhead_bytes",
    "activation_bytes",
    "backend_inflight_bytes",
    "headroom_bytes",
    "headroom_factor",
    "budget_bytes",
    "total_bytes",
    "fits",
]
"""mlxcel's `InspectReport` keys, in its order (its first key renamed)."""
KEYS = [*MLXCEL_KEYS]
KEYS.insert(KEYS.index("headroom_bytes") + 1, "allocator_overhead_bytes")  # vramscope's own


def test_json_report_keys_and_values(llama) -> None:  # type: ignore[no-untyped-def]
    est = estimate(llama, Workload(640), settings())
    text = to_json_pretty(inspect_report(llama, est, "0.1.0"))
    data = json.loads(text)
    assert list(data) == KEYS
    assert [k for k in data if k != "allocator_overhead_bytes"] == MLXCEL_KEYS
    assert list(data["inputs"]) == ["max_tokens", "batch", "kv_cache_mode", "quant"]
    assert data["inputs"] == {
        "max_tokens": 640,
        "batch": 1,
        "kv_cache_mode": "fp16",
        "quant": "default",
    }
    assert (data["model_type"], data["family"]) == ("llama", "llama")
    assert data["weights_source"] == "safetensors_header"
    assert data["kv_bytes_per_token"] == {"fp16": 131_072, "int8": 65_536, "turbo4": None}
    assert data["backend_inflight_bytes"] == 1 << 30
    assert data["headroom_bytes"] == 923_613_593 + 38_005_248 + (1 << 30)
    assert data["allocator_overhead_bytes"] == 923_613_593  # the banner's Allocator ovhd
    assert (
        data["weights_bytes"] + data["kv_bytes_total"] + data["headroom_bytes"]
        == data["total_bytes"]
        == 6_653_428_633
    )
    assert data["per_slot_overhead_bytes"] == 17_040_384
    assert data["headroom_factor"] == 1.2
    assert '\n  "headroom_factor": 1.2,\n' in text
    assert data["budget_bytes"] == 82_463_372_083 and data["fits"] is True


def test_json_nulls_unicode_and_family(model_dir) -> None:  # type: ignore[no-untyped-def]
    mamba = read_model_dir(model_dir({"model_type": "mamba", "num_hidden_layers": 2}))
    text = to_json_pretty(
        inspect_report(
            mamba, estimate(mamba, Workload(256, batch=2), settings(backend=Backend.CPU)), "x"
        )
    )
    assert '"kv_detail": "pure SSM — no KV cache"' in text  # UTF-8, not \u2014
    assert '"per_slot_overhead_bytes": null' in text
    data = json.loads(text)
    assert data["backend_inflight_bytes"] == 0
    assert data["kv_bytes_per_token"] == {"fp16": 0, "int8": 0, "turbo4": None}
    # mlxcel's fallback for a folder with no config and no weights (which vramscope
    # itself refuses before the estimate).
    folder = model_dir(name="empty")
    empty = snapshot_from_config("empty", None, resolve_weight_bytes(folder, None))
    data = json.loads(
        to_json_pretty(
            inspect_report(
                empty, estimate(empty, Workload(256), settings(backend=Backend.CPU)), "x"
            )
        )
    )
    assert data["model_type"] is None and data["family"] is None
    assert data["kv_bytes_per_token"] == {"fp16": None, "int8": None, "turbo4": None}
    gemma = read_model_dir(model_dir({"model_type": "gemma3_text", **MINIMAL_CONFIG}, name="g"))
    data = json.loads(
        to_json_pretty(
            inspect_report(
                gemma, estimate(gemma, Workload(256), settings(backend=Backend.CPU)), "x"
            )
        )
    )
    assert (data["model_type"], data["family"]) == ("gemma3_text", "gemma3")
    assert isinstance(data["per_slot_overhead_bytes"], int)


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1.2, "1.2"),
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.5, "0.5"),
        (1e-7, "1e-7"),
        (0.00001, "0.00001"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e16"),
        (1e17, "1e17"),
        (1.5e17, "1.5e17"),
        (123.456, "123.456"),
        (2.5e-5, "0.000025"),
        (1.2345e-6, "1.2345e-6"),
        (-2.0, "-2.0"),
        (0.0, "0.0"),
        (1.7976931348623157e308, "1.7976931348623157e308"),
    ],
)
def test_floats_format_as_serde_json(x: float, text: str) -> None:
    assert format_f64_like_serde(x) == text
