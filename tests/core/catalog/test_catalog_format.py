"""Format labels, read from what the files say: quantization blocks, then header dtypes,
then the config's torch_dtype."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.catalog.resolve import build_catalog
from core.model.config import ModelConfig
from core.model.format import describe_format
from tests.core.catalog.catalog_fixtures import TINY_CONFIG, write_tiny_model


def label(root: dict[str, Any], dtype_bytes: dict[str, int] | None = None) -> str:
    return describe_format(ModelConfig.from_dict(root), dtype_bytes or {})


@pytest.mark.parametrize(
    ("quantization", "expected"),
    [
        ({"group_size": 64, "bits": 4}, "MLX 4-bit g64"),
        ({"group_size": 32, "bits": 8}, "MLX 8-bit g32"),
        # mlx-lm >= 0.26.3 sends the MoE routers to 8 bits, recorded per layer.
        (
            {"group_size": 64, "bits": 4, "model.layers.0.mlp.gate": {"group_size": 64, "bits": 8}},
            "MLX mixed 4/8-bit g64",
        ),
        (
            {
                "group_size": 64,
                "bits": 3,
                "model.layers.0.self_attn.v_proj": {"group_size": 64, "bits": 6},
                "lm_head": {"group_size": 64, "bits": 6},
                "model.layers.1.mlp.down_proj": {"group_size": 64, "bits": 4},
            },
            "MLX mixed 3/4/6-bit g64",
        ),
        # mlx-lm 0.24.x recorded its predicate for every layer; booleans are not mixing.
        ({"group_size": 64, "bits": 4, "model.norm": False, "lm_head": True}, "MLX 4-bit g64"),
        ({"group_size": 32, "bits": 4, "mode": "mxfp4"}, "MLX mxfp4 4-bit g32"),
        ({"group_size": 64, "bits": 4, "mode": "affine"}, "MLX 4-bit g64"),
    ],
)
def test_mlx_quantization(quantization: dict[str, Any], expected: str) -> None:
    assert label({"quantization": quantization, "torch_dtype": "bfloat16"}) == expected


@pytest.mark.parametrize(
    ("qc", "expected"),
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}, "GPTQ 4-bit g128"),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1}, "GPTQ 8-bit"),
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": 1}, "AWQ 4-bit g128"),
        ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64}, "AWQ 4-bit g64"),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "FP8"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "bitsandbytes 4-bit"),
        ({"quant_method": "compressed-tensors", "config_groups": {}}, "compressed-tensors"),
        ({"quant_method": "exl3"}, "EXL3"),
    ],
)  # fmt: skip
def test_hugging_face_quantization_config(qc: dict[str, Any], expected: str) -> None:
    assert label({"quantization_config": qc, "torch_dtype": "bfloat16"}) == expected


def test_mlx_block_wins_over_its_quantization_config_copy() -> None:
    block = {"group_size": 64, "bits": 4}
    assert label({"quantization": block, "quantization_config": block}) == "MLX 4-bit g64"


def test_header_dtypes_by_bytes_then_torch_dtype() -> None:
    assert label({"torch_dtype": "bfloat16"}, {"F16": 10, "F32": 4}) == "F16"
    # FP8 weights with BF16 norms: many norm tensors, but most bytes are FP8.
    assert label({}, {"F8_E4M3": 7_000_000, "BF16": 30_000}) == "FP8"
    assert label({}, {"U8": 5}) == "U8"
    assert label({"torch_dtype": "bfloat16"}) == "BF16"
    assert label({"text_config": {"dtype": "float16"}}) == "F16"
    assert describe_format(None, {}) == "unknown"


def test_labels_come_from_the_files_of_a_real_folder(tmp_path: Path) -> None:
    # The config says bfloat16 but the weights were written as F16 (as mlx "-fp16" repos are).
    write_tiny_model(tmp_path / "models" / "f16", dict(TINY_CONFIG), dtype="F16")
    gptq = dict(TINY_CONFIG, quantization_config={"quant_method": "gptq", "bits": 4})
    write_tiny_model(tmp_path / "models" / "gptq", gptq)
    mixed = dict(
        TINY_CONFIG,
        quantization={"group_size": 64, "bits": 4, "lm_head": {"group_size": 64, "bits": 6}},
    )
    write_tiny_model(tmp_path / "models" / "mixed", mixed)
    (tmp_path / "models" / "mixed" / "model.safetensors").write_bytes(b"")  # not even read
    catalog = build_catalog(
        [tmp_path / "models"], include_hf_cache=False, include_profiles=False, env={}
    )
    labels = {e.name: e.format_label for e in catalog.entries}
    assert labels == {"f16": "F16", "gptq": "GPTQ 4-bit", "mixed": "MLX mixed 4/6-bit g64"}
    assert json.loads((tmp_path / "models" / "f16" / "config.json").read_text())["torch_dtype"] == (
        "bfloat16"
    )
