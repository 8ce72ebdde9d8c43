"""The what-if weights equal what mlx-lm's quantization really writes, to the byte."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.answer.quantize import (
    MLX_4BIT,
    MLX_8BIT,
    SCHEMES,
    QuantizeUnsupported,
    mlx_quantized_weights,
    quantized_tensor_bytes,
)
from core.catalog.model_dir import read_model_dir
from core.catalog.profiles import load_profile
from core.model.tensor_list import folder_tensors

from .mlx_convert import FAMILIES

ROOT = Path(__file__).resolve().parents[3]
HAS_MLX = all(importlib.util.find_spec(m) is not None for m in ("mlx", "mlx_lm"))


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every family written in Hub layout and converted by mlx-lm, in one child process."""
    if not HAS_MLX:
        pytest.skip("mlx and mlx-lm are not installed")
    out = tmp_path_factory.mktemp("mlx-convert")
    subprocess.run(
        [sys.executable, "-m", "tests.core.answer.mlx_convert", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=600,
    )
    return out


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_what_if_equals_the_header_sum_of_the_converted_model(
    converted: Path, family: str, scheme: str
) -> None:
    stored = converted / family / "stored"
    config = json.loads((stored / "config.json").read_text())
    predicted = mlx_quantized_weights(folder_tensors(stored), config, SCHEMES[scheme])
    real = read_model_dir(converted / family / scheme).weights
    assert real.source.json_label == "safetensors_header"
    assert predicted.bytes == real.bytes
    assert predicted.quantized_tensors > 0


def test_the_converted_folders_really_are_quantized(converted: Path) -> None:
    # Guards the comparison above: the reference folders hold packed words and scales.
    config = json.loads((converted / "qwen3_moe" / "mlx-4bit" / "config.json").read_text())
    assert config["quantization"]["bits"] == 4
    assert config["quantization"]["model.layers.0.mlp.gate"] == {"group_size": 64, "bits": 8}
    names = {n for n, _, _ in folder_tensors(converted / "qwen3_moe" / "mlx-4bit")}
    assert "model.layers.0.mlp.switch_mlp.up_proj.scales" in names
    assert "model.layers.0.mlp.switch_mlp.down_proj.scales" not in names  # width 96
    assert "lm_head.weight" not in names


def test_one_weight_by_hand() -> None:
    # A 4096 x 4096 bf16 Linear at 4 bits, group 64: 4096 * 512 words of 4 bytes,
    # plus 4096 * 64 scales and as many biases of 2 bytes.
    assert quantized_tensor_bytes((4096, 4096), "BF16", 4, 64) == 8_388_608 + 2 * 524_288


def test_qwen2_5_7b_instruct_bf16_to_4bit() -> None:
    # The worked example of docs/fit.md, from the built-in profile's 339 tensors.
    profile = load_profile("Qwen/Qwen2.5-7B-Instruct")
    assert profile.tensors is not None
    result = mlx_quantized_weights(profile.tensors, profile.config.root, MLX_4BIT)
    assert result.bytes == 4_284_263_424
    assert (result.quantized_tensors, result.kept_tensors, result.dropped_tensors) == (198, 141, 0)


@pytest.mark.parametrize(
    ("stored", "community"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", "mlx-community/Qwen2.5-7B-Instruct-4bit"),
        ("meta-llama/Llama-3.1-8B-Instruct", "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"),
        # The pt and it checkpoints share every shape; mlx-lm drops the vision tower.
        ("google/gemma-3-4b-it", "mlx-community/gemma-3-4b-pt-4bit"),
    ],
)
def test_the_what_if_of_a_real_model_equals_its_community_4bit_conversion(
    stored: str, community: str
) -> None:
    # Both pairs are built-in profiles of the real Hub files (header sums).
    source = load_profile(stored)
    assert source.tensors is not None
    predicted = mlx_quantized_weights(source.tensors, source.config.root, MLX_4BIT)
    assert predicted.bytes == load_profile(community).weight_bytes


@pytest.mark.parametrize(
    ("config", "tensors", "reason"),
    [
        (
            {"model_type": "llama", "quantization": {"bits": 4, "group_size": 64}},
            [("w.weight", "U32", (8, 8))],
            "already quantized",
        ),
        ({"model_type": "mamba"}, [("w.weight", "BF16", (64, 64))], "'mamba' is not modelled"),
        ({"model_type": "llama"}, [("w.weight", "F8_E4M3", (64, 64))], "holds F8_E4M3"),
        ({"model_type": "llama"}, [], "no tensor list"),
    ],
)
def test_no_number_where_the_rule_does_not_apply(
    config: dict[str, object], tensors: list[tuple[str, str, tuple[int, ...]]], reason: str
) -> None:
    with pytest.raises(QuantizeUnsupported, match=reason):
        mlx_quantized_weights(tensors, config, MLX_8BIT)
