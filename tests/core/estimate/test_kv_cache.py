"""KV architecture classification and sizing (spec section 3)."""

from __future__ import annotations

from typing import Any

import pytest

from core.catalog.profiles import load_profile
from core.estimate.kv_cache import (
    UNAVAILABLE_DETAIL,
    KvKind,
    attn_dims,
    classify_kv_arch,
    count_attention_layers,
    kv_cache_bytes,
    kv_cache_params,
    kv_term,
    resolve_num_kv_heads,
    round_ctx,
)
from core.model.config import ModelConfig, get_u64
from core.units import U64_MAX
from tests.core.helpers import LLAMA_4BIT, MINIMAL_CONFIG, QWEN3_MOE_4BIT, QWEN25_4BIT


def kv(config: dict[str, Any] | ModelConfig, ctx: int, int8: bool = False, batch: int = 1):
    cfg = config if isinstance(config, ModelConfig) else ModelConfig.from_dict(config)
    return kv_term(classify_kv_arch(cfg), ctx, int8, batch)


GPT2 = {"model_type": "gpt2", "n_layer": 12, "n_head": 12, "n_embd": 768, "vocab_size": 50257}
BIGCODE = {
    "model_type": "gpt_bigcode",
    "n_layer": 24,
    "n_head": 16,
    "n_embd": 2048,
    "n_inner": 8192,
    "multi_query": True,
    "vocab_size": 49280,
}


@pytest.mark.parametrize(
    ("tokens", "rounded"),
    [(0, 0), (1, 256), (100, 256), (256, 256), (257, 512), (640, 768), (U64_MAX, U64_MAX)],
)
def test_round_ctx(tokens: int, rounded: int) -> None:
    assert round_ctx(tokens) == rounded


@pytest.mark.parametrize(
    ("repo", "ctx", "expected", "per_token"),
    [
        (LLAMA_4BIT, 640, 100_663_296, 131_072),
        (LLAMA_4BIT, 4096, 536_870_912, 131_072),
        (LLAMA_4BIT, 8192, 1_073_741_824, 131_072),
        (QWEN25_4BIT, 640, 44_040_192, 57_344),
        (QWEN25_4BIT, 4096, 234_881_024, 57_344),
        (QWEN3_MOE_4BIT, 640, 75_497_472, 98_304),
        (QWEN3_MOE_4BIT, 4096, 402_653_184, 98_304),
    ],
)
def test_worked_values_of_the_measured_models(
    repo: str, ctx: int, expected: int, per_token: int
) -> None:
    term = kv(load_profile(repo).config, ctx)
    assert (term.bytes, term.per_token_bytes, term.kind) == (expected, per_token, KvKind.STANDARD)


def test_qwen25_sliding_window_without_pattern_is_all_global() -> None:
    term = kv(load_profile(QWEN25_4BIT).config, 4096)
    assert term.detail == "standard attention (28 layers, full context)"


def test_openai_era_names() -> None:
    gpt2 = kv(GPT2, 8192)
    assert (gpt2.bytes, gpt2.per_token_bytes) == (301_989_888, 36_864)
    bigcode = kv(BIGCODE, 8192)
    assert (bigcode.bytes, bigcode.per_token_bytes) == (100_663_296, 12_288)
    mha = dict(BIGCODE, multi_query=False)
    assert kv(mha, 8192).bytes == 1_610_612_736


def test_flat_formula_agrees_with_the_classifier() -> None:
    for cfg, heads, head_dim in ((GPT2, 12, 64), (BIGCODE, 1, 128)):
        params = kv_cache_params(ModelConfig.from_dict(cfg))
        assert params is not None
        layers, kvh, hd = params
        assert (kvh, hd) == (heads, head_dim)
        assert kv_cache_bytes(layers, kvh, hd, 2, 8192, 1) == kv(cfg, 8192).bytes
    assert kv_cache_bytes(32, 32, 128, 2, 8192, 1) == 4_294_967_296
    assert kv_cache_bytes(32, 8, 128, 2, 8192, 1) == 1_073_741_824
    assert kv_cache_bytes(32, 8, 128, 2, 131072, 1) == 17_179_869_184
    assert kv_cache_bytes(32, 8, 128, 1, 8192, 1) * 2 == kv_cache_bytes(32, 8, 128, 2, 8192, 1)
    assert kv_cache_bytes(32, 8, 128, 2, 257, 1) == kv_cache_bytes(32, 8, 128, 2, 512, 1)


def test_explicit_head_dim_wins_over_hidden_division() -> None:
    cfg = {
        "text_config": {
            "hidden_size": 1536,
            "num_hidden_layers": 35,
            "num_attention_heads": 8,
            "num_key_value_heads": 1,
            "head_dim": 256,
        }
    }
    assert kv(cfg, 256).bytes == 9_175_040


def test_int8_halves_and_batch_scales() -> None:
    base = kv(MINIMAL_CONFIG, 8192)
    assert kv(MINIMAL_CONFIG, 8192, int8=True).bytes * 2 == base.bytes
    assert kv(MINIMAL_CONFIG, 8192, batch=4).bytes == 4 * base.bytes
    assert kv(MINIMAL_CONFIG, 8192, batch=4).per_token_bytes == 4 * base.per_token_bytes
    assert base.per_token_bytes == 131_072


def test_pure_ssm_has_no_cache() -> None:
    for model_type in ("mamba", "Mamba2", "falcon_mamba"):
        term = kv({"model_type": model_type, "num_hidden_layers": 24}, 8192)
        assert (term.bytes, term.per_token_bytes, term.kind) == (0, 0, KvKind.PURE_SSM)
        assert term.detail == "pure SSM — no KV cache"
        assert term.available


def test_mla_compressed_for_v3_model_types() -> None:
    cfg = {
        "model_type": "deepseek_v3",
        "num_hidden_layers": 61,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "num_attention_heads": 128,
    }
    term = kv(cfg, 256)
    assert term.kind is KvKind.MLA_COMPRESSED
    assert term.detail == "MLA compressed latent (576 elems/token/layer, shared across heads)"
    assert term.per_token_bytes == 61 * 576 * 2
    assert kv(dict(cfg, model_type="deepseek_v32"), 256).kind is KvKind.MLA_COMPRESSED
    no_rope = {k: v for k, v in cfg.items() if k != "qk_rope_head_dim"}
    assert kv(no_rope, 256).per_token_bytes == 61 * (512 + 64) * 2


def test_mla_decompressed_for_deepseek_v2_lite() -> None:
    term = kv(load_profile("deepseek-ai/DeepSeek-V2-Lite").config, 4096)
    assert term.kind is KvKind.MLA_DECOMPRESSED
    assert term.detail == "MLA decompressed per-head K/V (DeepSeek-V2 style)"
    assert term.per_token_bytes == 276_480  # 27 layers x 16 heads x (128 + 64 + 128) x 2
    defaults = kv({"model_type": "other", "num_hidden_layers": 2, "kv_lora_rank": 8}, 256)
    assert defaults.per_token_bytes == 2 * 1 * (128 + 64 + 128) * 2


def test_hybrid_qwen3_next_counts_full_attention_layers() -> None:
    term = kv(load_profile("Qwen/Qwen3-Next-80B-A3B-Instruct").config, 8192)
    assert term.kind is KvKind.HYBRID
    assert term.detail == "hybrid: 12 attention layer(s) hold KV (rest recurrent/SSM)"
    assert term.per_token_bytes == 24_576


BASE = {
    "num_hidden_layers": 8,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}


@pytest.mark.parametrize(
    ("extra", "n_attn"),
    [
        ({"layers_block_type": ["mamba", "attention", "Attention", "mlp", 3]}, 2),
        ({"block_types": ["recurrent", "attn", "*", "ATTN"]}, 3),
        ({"block_types": "not-a-list", "hybrid_override_pattern": "M*M*-*"}, 3),
        ({"hybrid_override_pattern": ["*", "M", "*"]}, 2),
        ({"attn_layer_period": 4, "attn_layer_offset": 1}, 2),  # i in {3, 7}
        ({"attn_layer_period": 3}, 3),  # i in {0, 3, 6}
        ({"full_attention_interval": 4}, 2),  # i in {3, 7}
        ({"full_attention_interval": 4, "mlp_only_layers": [3, 5, 3]}, 1),
        ({"full_attention_interval": 100}, 0),
    ],
)
def test_hybrid_rules(extra: dict[str, Any], n_attn: int) -> None:
    cfg = ModelConfig.from_dict(dict(BASE, **extra))
    assert count_attention_layers(cfg.text, 8) == n_attn
    term = kv(cfg, 256)
    assert term.kind is KvKind.HYBRID
    assert term.bytes == n_attn * 2 * 2 * 16 * 256 * 2


def test_hybrid_window_and_zero_layers() -> None:
    windowed = kv(dict(BASE, attn_layer_period=2, attention_window_size=300), 4096)
    assert windowed.detail == "hybrid: 4 attention layer(s), windowed"
    assert windowed.bytes == 4 * 64 * 512 * 2  # window rounded up to 512
    assert windowed.per_token_bytes == 0
    none = kv(dict(BASE, full_attention_interval=100), 4096)
    assert (none.bytes, none.available) == (0, True)


def test_hybrid_counting_is_constant_time_for_absurd_layer_counts() -> None:
    cfg = dict(BASE, num_hidden_layers=1 << 62, attn_layer_period=3)
    assert count_attention_layers(ModelConfig.from_dict(cfg).text, 1 << 62) == (1 << 62) // 3 + 1
    assert kv(cfg, 1 << 40).bytes == U64_MAX


def test_sliding_window_from_layer_types() -> None:
    cfg = dict(
        BASE,
        sliding_window=1024,
        layer_types=["sliding_attention"] * 5 + ["full_attention", "FULL_ATTENTION", 7],
    )
    term = kv(cfg, 8192)
    assert term.kind is KvKind.SLIDING_WINDOW
    assert term.detail == "sliding-window: 5 layer(s) capped at 1024 tokens, 2 global"
    per_layer = 2 * 2 * 16 * 2
    assert term.bytes == 2 * per_layer * 8192 + 5 * per_layer * 1024
    assert term.per_token_bytes == 2 * per_layer  # windowed layers add nothing at steady state


def test_sliding_window_all_global_layer_types_keeps_the_kind() -> None:
    term = kv(dict(BASE, sliding_window=512, layer_types=["full_attention"] * 8), 1024)
    assert term.kind is KvKind.SLIDING_WINDOW
    assert term.detail == "sliding-window: 0 layer(s) capped at 0 tokens, 8 global"


def test_sliding_window_layer_types_without_strings_fall_back_to_pattern() -> None:
    term = kv(dict(BASE, sliding_window=512, layer_types=[1, 2], sliding_window_pattern=4), 1024)
    assert term.detail == "sliding-window: 6 layer(s) capped at 512 tokens, 2 global"


def test_sliding_window_pattern_and_rounding() -> None:
    term = kv(dict(BASE, sliding_window=4000, sliding_window_pattern=2), 8192)
    per_layer = 2 * 2 * 16 * 2
    assert term.bytes == 4 * per_layer * 8192 + 4 * per_layer * 4096  # 4000 rounds to 4096
    short = kv(dict(BASE, sliding_window=4000, sliding_window_pattern=2), 300)
    assert short.bytes == 8 * per_layer * 512  # the window never exceeds the context


def test_mistral_sliding_window_without_pattern_is_standard() -> None:
    term = kv(load_profile("mistralai/Mistral-7B-Instruct-v0.1").config, 8192)
    assert term.kind is KvKind.STANDARD
    assert term.bytes == 1_073_741_824


def test_use_sliding_window_false_is_ignored() -> None:
    cfg = dict(BASE, sliding_window=256, sliding_window_pattern=2, use_sliding_window=False)
    assert kv(cfg, 1024).kind is KvKind.SLIDING_WINDOW


def test_unavailable_architectures() -> None:
    for cfg in ({"vocab_size": 32000}, {"num_hidden_layers": 2}, {"hidden_size": 64}):
        term = kv(cfg, 8192)
        assert (term.bytes, term.available, term.detail) == (0, False, UNAVAILABLE_DETAIL)
    assert kv_term(None, 8192, False, 1).detail == UNAVAILABLE_DETAIL


def test_context_zero_gives_zero() -> None:
    assert kv(MINIMAL_CONFIG, 0).bytes == 0


def test_field_aliases_and_priority() -> None:
    both = ModelConfig.from_dict(
        {"num_hidden_layers": 32, "n_layer": 12, "hidden_size": 4096, "n_embd": 768}
    )
    assert get_u64(both.text, ("num_hidden_layers", "n_layer")) == 32
    assert get_u64(both.text, ("hidden_size", "n_embd")) == 4096
    text = {"n_head": 16, "multi_query": True}
    assert resolve_num_kv_heads(text, 16) == 1
    assert resolve_num_kv_heads({"n_head": 16}, 16) == 16
    assert resolve_num_kv_heads({"multi_query": False}, 16) == 16
    assert resolve_num_kv_heads({"num_kv_heads": 8, "multi_query": True}, 16) == 8
    assert resolve_num_kv_heads({"multi_query": "true"}, 16) == 16
    assert resolve_num_kv_heads({"multi_query": True}, 0) == 1


@pytest.mark.parametrize(
    "bad",
    [4096.0, "4096", None, True, -1, 1 << 64],
)
def test_non_u64_values_are_skipped_as_absent(bad: Any) -> None:
    cfg = ModelConfig.from_dict(
        {"hidden_size": bad, "d_model": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
    )
    assert attn_dims(cfg.text) == (4, 16)


@pytest.mark.parametrize("text_config", [None, [], [1, 2], "llama", 7, True])
def test_text_config_that_is_not_an_object_hides_every_field(text_config: Any) -> None:
    # class of input: a present text_config of the wrong type. mlxcel's `get` on it
    # finds nothing (spec 12.2), so the root's fields are not used either.
    cfg = ModelConfig.from_dict(dict(MINIMAL_CONFIG, text_config=text_config))
    term = kv(cfg, 8192)
    assert (term.bytes, term.kind) == (0, None)
    assert cfg.activation_dims() is None


def test_model_type_falls_back_to_the_root() -> None:
    cfg = ModelConfig.from_dict({"model_type": "MAMBA", "text_config": {"num_hidden_layers": 4}})
    assert cfg.model_type == "mamba"
    assert kv(cfg, 256).kind is KvKind.PURE_SSM
