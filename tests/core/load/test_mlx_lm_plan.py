"""mlx-lm's load plan over the real models' configs and tensor lists (the built-in
profiles, copied from the fixtures): dimensions from the weights, each family's caches."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.catalog.profiles import load_profile, profile_snapshot
from core.estimate.snapshot import snapshot_from_config
from core.estimate.weights import weights_from_config
from core.load.caches import CacheKind
from core.load.load import Origin
from core.load.mlx_lm import MlxLmPlan, NoLoad, plan_mlx_lm
from core.model.config import ModelConfig


def plan(repo_id: str, kv_int8: bool = False) -> MlxLmPlan:
    profile = load_profile(repo_id)
    tensors = list(profile.tensors) if profile.tensors is not None else None
    made = plan_mlx_lm(profile_snapshot(profile), tensors, kv_int8=kv_int8)
    assert isinstance(made, MlxLmPlan), made
    return made


def source(p: MlxLmPlan, name: str) -> tuple[int, Origin, str]:
    (found,) = [s for s in p.sources if s.name == name]
    return found.value, found.origin, found.detail


def test_qwen3_next_holds_a_fixed_state_in_its_linear_layers() -> None:
    p = plan("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert (p.state_layers, len(p.caches)) == (36, 48)
    # conv window (4 - 1) x (2 x 16 x 128 + 32 x 128) in bf16, state 32 x 128 x 128 fp32
    state = 3 * 8192 * 2 + 32 * 128 * 128 * 4
    kv_slot = 2 * 256 * 2 * 2  # 2 KV heads of 256 (k_proj [512, 2048]), K and V, bf16
    for tokens in (1, 4096, 100_000):
        slots = -(-tokens // 256) * 256
        assert p.at(tokens).kv_bytes == 36 * state + 12 * slots * kv_slot
    assert source(p, "linear_num_value_heads")[:2] == (32, Origin.WEIGHTS)


def test_deepseek_v2_is_held_expanded_per_head_as_mlx_lm_0_32_2_holds_it() -> None:
    p = plan("deepseek-ai/DeepSeek-V2-Lite")
    (c,) = set(p.caches)
    # keys: 16 heads x (128 nope + 64 rope) from q_proj; values 16 x 128 from o_proj
    assert (c.k_heads, c.k_dim, c.v_heads, c.v_dim) == (16, 192, 16, 128)
    assert source(p, "qk_rope_head_dim")[:2] == (64, Origin.WEIGHTS)
    assert source(p, "kv_lora_rank")[:2] == (512, Origin.WEIGHTS)


def test_fused_and_packed_projections_give_the_kv_width() -> None:
    phi = plan("microsoft/Phi-3-mini-4k-instruct")
    assert {(c.k_heads, c.k_dim) for c in phi.caches} == {(32, 96)}  # qkv_proj less q rows
    qwen = plan("mlx-community/Qwen3-30B-A3B-4bit")  # packed uint32, bf16 scales
    assert {(c.k_heads, c.k_dim, c.dtype_bytes) for c in qwen.caches} == {(4, 128, 2)}
    assert "k_proj scales BF16" in source(qwen, "kv_dtype_bytes")[2]


@pytest.mark.parametrize("repo_id", ["mistralai/Mistral-7B-Instruct-v0.1", "google/gemma-2-2b-it"])
def test_families_whose_mlx_lm_model_builds_no_rotating_cache_hold_every_layer_full(
    repo_id: str,
) -> None:
    # Mistral's sliding_window 4096 and gemma-2's alternating windows: mlx-lm 0.32.2
    # builds a KVCache for every layer of both.
    p = plan(repo_id)
    assert p.sliding_layers == 0 and {c.kind for c in p.caches} == {CacheKind.KV}


def test_an_8_bit_cache_mlx_lm_cannot_make_is_counted_unquantized_and_said() -> None:
    plain, int8 = plan("google/gemma-2-2b-it"), plan("google/gemma-2-2b-it", kv_int8=True)
    assert int8.at(8192).kv_bytes == plain.at(8192).kv_bytes
    (note,) = [n for n in int8.notes if n.startswith("--kv-cache-mode int8")]
    assert "cannot read a QuantizedKVCache" in note and "counted unquantized" in note
    gemma3 = plan("google/gemma-3-4b-it", kv_int8=True)
    assert any("RotatingKVCache.to_quantized" in n for n in gemma3.notes)


def test_no_tokens_hold_no_cache() -> None:
    load = plan("meta-llama/Llama-3.1-8B-Instruct").at(0)
    assert load.kv_bytes == 0 and load.transient_bytes == 0
    assert load.total_bytes == load.weights_bytes


def test_a_model_without_safetensors_headers_has_no_load() -> None:
    profile = load_profile("meta-llama/Llama-3.1-8B-Instruct")
    snap = snapshot_from_config("x", profile.config, weights_from_config(profile.config))
    made = plan_mlx_lm(snap, None)
    assert isinstance(made, NoLoad) and "safetensors headers" in made.reason


@pytest.mark.parametrize("field", ["num_hidden_layers", "layer_types"])
def test_a_hostile_layer_count_is_refused_not_built(field: str) -> None:
    profile = load_profile("meta-llama/Llama-3.1-8B-Instruct")
    root = dict(profile.config.root)
    root[field] = 10**12 if field == "num_hidden_layers" else ["full_attention"] * 5000
    snap = replace(profile_snapshot(profile), config=ModelConfig.from_dict(root))
    made = plan_mlx_lm(snap, list(profile.tensors or ()))
    assert isinstance(made, NoLoad) and "more than 4,096 layers" in made.reason
