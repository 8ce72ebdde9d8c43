"""vramscope's own weights count from a config's shapes, beside mlxcel's analytical one.

mlxcel's analytical fallback (`weights.estimate_params_from_config`) counts every
expert at `intermediate_size` and every parameter at 2 bytes: Qwen3-Next-80B-A3B (512
experts of `moe_intermediate_size` 512, not 5120) comes out at 1442 GiB, about ten
times its real 149 GiB, and a 4-bit MLX checkpoint at four times its size. mlxcel's
bytes stay the estimate; this count only decides whether one warning line says how
far off they look (`analytical_warning`).

The count, per layer: attention as q/k/v/o projections (`h x heads x head_dim` each
way; linear-attention and MLA layers are counted as standard ones, a few percent at
most), then a dense MLP (`3 x h x intermediate_size`) or, on a MoE layer, experts x
`3 x h x moe_intermediate_size` (`intermediate_size` where the config has none, as
Mixtral's) plus the shared experts (`shared_expert_intermediate_size`, or
`n_shared_experts x moe_intermediate_size`) and the router; two norms. Then the
embeddings, an `lm_head` unless `tie_word_embeddings` (transformers' default: tied)
and the final norm; a vision tower is not counted. Which layers are MoE follows the
config (`mlp_only_layers`, `decoder_sparse_step`; `first_k_dense_replace`,
`moe_layer_freq`). Bytes: an MLX `quantization` (bits, group_size) stores every
weight but the norms at `bits` plus a 2-byte scale and bias per group; otherwise
`torch_dtype` (2 bytes unless it says float32 or an 8-bit type).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.model.config import (
    EXPERT_COUNT_KEYS,
    HEAD_DIM_KEYS,
    HIDDEN_SIZE_KEYS,
    INTERMEDIATE_SIZE_KEYS,
    LAYER_COUNT_KEYS,
    MULTI_QUERY_KEY,
    NUM_HEADS_KEYS,
    NUM_KV_HEADS_KEYS,
    ModelConfig,
    as_u64,
    get_u64,
)
from core.units import U64_MAX, format_bytes

DIFFERENCE_LIMIT = 0.25
"""Beyond this relative difference from vramscope's count, mlxcel's figure is flagged."""

EXPERTS_PER_TOKEN_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_topk", "top_k")
"""How many routed experts a token goes through (Qwen, Mixtral, DeepSeek; gpt-oss; others)."""

_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
_SCALE_BYTES = 2  # MLX stores a group's scale and bias in the float type (fp16 / bf16)


@dataclass(frozen=True)
class ShapeCount:
    """vramscope's count of a config's weights."""

    params: int
    bytes: int
    experts: int
    """Routed experts per MoE layer (1 for a dense model)."""
    bits: int | None
    active_params: int | None = None
    """Parameters one token runs through (a MoE routes it to `experts_per_token` of the
    routed experts); None for a dense model, where every parameter is active."""
    """The MLX quantization's bits, None when stored unquantized."""


def _quantization(config: ModelConfig) -> tuple[int, int] | None:
    for key in ("quantization", "quantization_config"):
        q = config.root.get(key)
        if isinstance(q, Mapping):
            bits, group = as_u64(q.get("bits")), as_u64(q.get("group_size"))
            if bits and group and bits <= 16:
                return bits, group
    return None


def _dtype_bytes(config: ModelConfig) -> int:
    for obj in (config.text, config.root):
        for key in ("torch_dtype", "dtype"):
            value = obj.get(key)
            if isinstance(value, str) and value in _DTYPE_BYTES:
                return _DTYPE_BYTES[value]
    return 2


def _is_moe_layer(text: Mapping[str, Any], layer: int) -> bool:
    dense = text.get("mlp_only_layers")
    if isinstance(dense, list) and layer in dense:
        return False
    step = as_u64(text.get("decoder_sparse_step")) or 1
    first_dense = as_u64(text.get("first_k_dense_replace")) or 0
    freq = as_u64(text.get("moe_layer_freq")) or 1
    return (layer + 1) % step == 0 and layer >= first_dense and layer % freq == 0


def _tied(config: ModelConfig) -> bool:
    # transformers' default is tied: an untied lm_head is written down as false.
    for obj in (config.text, config.root):
        value = obj.get("tie_word_embeddings")
        if isinstance(value, bool):
            return value
    return True


def count_from_shapes(config: ModelConfig) -> ShapeCount | None:
    """vramscope's count, or None where the config lacks the hidden size or layers."""
    text = config.text
    h, layers = get_u64(text, HIDDEN_SIZE_KEYS), get_u64(text, LAYER_COUNT_KEYS)
    if not h or not layers or layers > 1 << 20:
        return None  # no shapes to count (or a hostile layer count: mlxcel's figure alone)
    vocab = get_u64(text, ("vocab_size",)) or 32000
    ffn = get_u64(text, INTERMEDIATE_SIZE_KEYS) or 4 * h
    heads = get_u64(text, NUM_HEADS_KEYS) or max(h // 64, 1)
    kv_heads = get_u64(text, NUM_KV_HEADS_KEYS)
    if kv_heads is None:
        kv_heads = 1 if text.get(MULTI_QUERY_KEY) is True else heads
    head_dim = get_u64(text, HEAD_DIM_KEYS) or max(round(h / heads), 1)
    experts = max(get_u64(text, EXPERT_COUNT_KEYS) or 1, 1)
    expert_ffn = get_u64(text, ("moe_intermediate_size",)) or ffn
    shared_ffn = get_u64(text, ("shared_expert_intermediate_size",)) or (
        (get_u64(text, ("n_shared_experts",)) or 0) * expert_ffn
    )

    attention = 2 * h * heads * head_dim + 2 * h * kv_heads * head_dim
    dense_mlp = 3 * h * ffn
    moe_mlp = experts * 3 * h * expert_ffn + h * experts  # experts + router
    if shared_ffn:
        moe_mlp += 3 * h * shared_ffn + h  # the shared experts and their gate
    moe_layers = sum(1 for i in range(layers) if experts > 1 and _is_moe_layer(text, i))
    chosen = min(max(get_u64(text, EXPERTS_PER_TOKEN_KEYS) or experts, 1), experts)
    idle = moe_layers * (experts - chosen) * 3 * h * expert_ffn  # routed experts a token skips
    matrices = (
        layers * attention
        + moe_layers * moe_mlp
        + (layers - moe_layers) * dense_mlp
        + vocab * h * (1 if _tied(config) else 2)
    )
    norms = (2 * layers + 1) * h
    quant = _quantization(config)
    if quant is None:
        stored = (matrices + norms) * _dtype_bytes(config)
    else:
        bits, group = quant
        stored = matrices * bits // 8 + (matrices // group) * 2 * _SCALE_BYTES
        stored += norms * _dtype_bytes(config)
    return ShapeCount(
        params=matrices + norms,
        bytes=min(stored, U64_MAX),
        experts=experts,
        bits=quant[0] if quant else None,
        active_params=matrices + norms - idle if moe_layers else None,
    )


def analytical_warning(config: ModelConfig, mlxcel_bytes: int) -> str | None:
    """One line when mlxcel's analytical bytes differ from vramscope's count by more
    than 25%, with both figures; None otherwise (or where there is nothing to count)."""
    own = count_from_shapes(config)
    if own is None or own.bytes == 0:
        return None
    if abs(mlxcel_bytes - own.bytes) <= DIFFERENCE_LIMIT * own.bytes:
        return None
    what = [f"{own.experts} experts" if own.experts > 1 else "dense"]
    what.append(f"{own.bits}-bit" if own.bits else "unquantized")
    why = ["every expert at intermediate_size"] if own.experts > 1 else []
    why += ["2 bytes a parameter"] if own.bits else []
    because = f" (mlxcel counts {' and '.join(why)})" if why else ""
    return (
        f"weights: mlxcel's analytical count from config.json, {format_bytes(mlxcel_bytes)}, "
        f"is kept, but vramscope's own count from the config's shapes ({', '.join(what)}) is "
        f"{format_bytes(own.bytes)}: {mlxcel_bytes / own.bytes:.2f}x{because}"
    )
