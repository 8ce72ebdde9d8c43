"""Reading models for measurement: families, quantization blocks, untrusted files, skeletons."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from core.catalog.profiles import list_profile_ids, load_profile
from core.model.config import ModelConfig
from core.model.quant_scheme import QuantParams
from hip_backend.errors import BadModelError, UnsupportedModelError
from hip_backend.model.arch import RopeKind, arch_from_config
from hip_backend.model.layout import tensors_from_config
from hip_backend.model.manifest import plan_from_folder
from hip_backend.model.source import ModelSource, resolve_source
from tests.hip_backend.conftest import write_skeleton_file
from tests.model_writers import write_skeleton

FIXTURE_FAMILIES = {
    "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit": "llama",
    "mlx-community/Qwen2.5-7B-Instruct-4bit": "qwen2",
    "mlx-community/Qwen3-30B-A3B-4bit": "qwen3_moe",
    "mistralai/Mistral-7B-Instruct-v0.1": "llama",
    "meta-llama/Llama-3.1-8B-Instruct": "llama",
    "Qwen/Qwen3-30B-A3B": "qwen3_moe",
}


@pytest.mark.parametrize("repo_id", sorted(FIXTURE_FAMILIES))
def test_measured_families_resolve_with_the_exact_profile_tensors(repo_id: str) -> None:
    resolved = resolve_source(ModelSource(profile_id=repo_id))
    profile = load_profile(repo_id)
    assert resolved.arch.family == FIXTURE_FAMILIES[repo_id]
    assert resolved.plan.synthetic
    assert resolved.plan.total_bytes == profile.weight_bytes  # what the estimate counts


def test_llama_31_4bit_reads_llama3_rope_and_the_quantization_block() -> None:
    arch = arch_from_config(load_profile("mlx-community/Meta-Llama-3.1-8B-Instruct-4bit").config)
    assert (arch.rope.kind, arch.rope.factor, arch.rope.original_max_position_embeddings) == (
        RopeKind.LLAMA3,
        8.0,
        8192,
    )
    assert arch.quant is not None
    assert arch.quant.default == QuantParams(4, 64)
    assert not arch.tie_embeddings
    assert arch.float_dtype == "BF16"


def test_config_derived_tensors_equal_the_published_mlx_layout() -> None:
    """The shape-only path for a config-only folder writes what mlx-lm would have."""
    for repo_id in ("mlx-community/Meta-Llama-3.1-8B-Instruct-4bit", "Qwen/Qwen3-30B-A3B"):
        profile = load_profile(repo_id)
        derived = {(t.name, t.shape) for t in tensors_from_config(arch_from_config(profile.config))}
        listed = {(n, tuple(s)) for n, _, s in profile.tensors or ()}
        if repo_id.startswith("Qwen/"):  # the HF original stores experts one by one
            listed = {x for x in listed if ".experts." not in x[0]}
            derived = {x for x in derived if ".switch_mlp." not in x[0]}
        assert derived == listed


def test_unsupported_families_say_so_and_name_the_supported_ones() -> None:
    unsupported = [p for p in list_profile_ids() if "gemma" in p or "Phi" in p or "Deep" in p]
    assert unsupported
    for repo_id in unsupported:
        with pytest.raises(UnsupportedModelError, match="not supported for measurement"):
            arch_from_config(load_profile(repo_id).config)


def config_with(**changes: Any) -> ModelConfig:
    base = json.loads(load_profile("mlx-community/Qwen3-30B-A3B-4bit").config_text)
    base.update(changes)
    return ModelConfig.from_dict(base)


def test_per_layer_overrides_and_false_entries_are_honoured() -> None:
    arch = arch_from_config(
        config_with(
            quantization={
                "group_size": 64,
                "bits": 4,
                "model.layers.0.mlp.gate": {"group_size": 64, "bits": 8},
                "model.layers.1.mlp.gate": False,
            }
        )
    )
    assert arch.quant is not None
    assert arch.quant.params_for("model.layers.0.mlp.gate") == QuantParams(8, 64)
    assert arch.quant.params_for("model.layers.1.mlp.gate") is None
    assert arch.quant.params_for("model.layers.2.mlp.gate") == QuantParams(4, 64)


@pytest.mark.parametrize(
    ("changes", "kind", "words"),
    [
        ({"quantization": {"group_size": 64, "bits": 3}}, UnsupportedModelError, "3-bit"),
        (
            {"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}},
            UnsupportedModelError,
            "mxfp4",
        ),
        ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, UnsupportedModelError, "yarn"),
        ({"hidden_size": "2048"}, BadModelError, "hidden_size"),
        ({"num_key_value_heads": 5}, BadModelError, "KV heads"),
        ({"num_experts_per_tok": 999}, BadModelError, "num_experts_per_tok"),
    ],
)
def test_configs_the_engine_cannot_run_fail_with_a_reason(
    changes: dict[str, Any], kind: type[Exception], words: str
) -> None:
    with pytest.raises(kind, match=words):
        arch_from_config(config_with(**changes))


def test_real_files_are_planned_with_exact_byte_ranges(tiny_llama: Path) -> None:
    plan = plan_from_folder(tiny_llama)
    assert plan is not None
    assert not plan.synthetic
    q = plan.tensors["model.layers.0.self_attn.q_proj.weight"]
    assert (q.dtype, q.shape, q.nbytes) == ("U32", (256, 32), 256 * 32 * 4)
    assert q.file == tiny_llama / "model.safetensors"
    assert sum(t.nbytes for t in plan.tensors.values()) == plan.total_bytes


def test_sparse_skeleton_and_index_only_folders_are_synthetic(tmp_path: Path) -> None:
    profile = load_profile("mlx-community/Qwen2.5-7B-Instruct-4bit")
    headers = write_skeleton(profile, tmp_path / "headers")
    plan = plan_from_folder(headers)
    assert plan is not None
    assert plan.synthetic
    assert "no weight data on disk" in plan.reason
    assert plan.total_bytes == profile.weight_bytes
    index_only = write_skeleton(profile, tmp_path / "index", layout="index-only")
    assert plan_from_folder(index_only) is None  # shapes then come from config.json
    resolved = resolve_source(ModelSource(folder=index_only))
    assert resolved.plan.synthetic
    assert resolved.plan.total_bytes == profile.weight_bytes


def test_a_forced_shape_only_run_keeps_the_real_tensor_list(tiny_llama: Path) -> None:
    real = plan_from_folder(tiny_llama)
    assert real is not None
    resolved = resolve_source(ModelSource(folder=tiny_llama), force_synthetic=True)
    assert resolved.plan.synthetic
    assert resolved.plan.tensors.keys() == real.tensors.keys()
    assert resolved.plan.total_bytes == real.total_bytes


def damaged(src: Path, dest: Path, edit: Any) -> Path:
    shutil.copytree(src, dest)
    edit(dest / "model.safetensors")
    return dest


def test_a_truncated_shard_is_a_bad_model(tiny_llama: Path, tmp_path: Path) -> None:
    def cut(path: Path) -> None:
        with path.open("r+b") as fh:
            fh.truncate(path.stat().st_size - 1000)

    folder = damaged(tiny_llama, tmp_path / "cut", cut)
    # A short data region is a damaged file (issue 8): never synthetic, never read past the end.
    with pytest.raises(BadModelError, match="truncated"):
        plan_from_folder(folder)


def test_offsets_that_disagree_with_the_shape_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "lying"
    folder.mkdir()
    write_skeleton_file(folder / "model.safetensors", {"a": ("F16", [4, 4])})
    raw = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(raw.replace(b"[0,32]", b"[0,16]"))
    with pytest.raises(BadModelError, match="spans 16 bytes"):
        plan_from_folder(folder)


def test_an_index_naming_files_outside_the_folder_is_ignored(
    tiny_llama: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "escape"
    shutil.copytree(tiny_llama, folder)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"] = {k: "../../etc/passwd" for k in index["weight_map"]}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    plan = plan_from_folder(folder)
    assert plan is not None
    assert {t.file for t in plan.tensors.values()} == {folder / "model.safetensors"}


def test_an_oversized_header_length_is_refused_without_reading_it(tmp_path: Path) -> None:
    folder = tmp_path / "huge"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes((1 << 40).to_bytes(8, "little") + b"{}")
    with pytest.raises(BadModelError, match="cap"):
        plan_from_folder(folder)
