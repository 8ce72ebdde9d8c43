"""What mlxcel derives from an estimate: paged-KV budgets, workspace reserve, quant advice.

These read only the estimate's terms (and the config for geometry); none of them
changes the total.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from core.estimate.kv_cache import kv_cache_params
from core.model.config import (
    HEAD_DIM_KEYS,
    HIDDEN_SIZE_KEYS,
    LAYER_COUNT_KEYS,
    NUM_HEADS_KEYS,
    ModelConfig,
)
from core.numbers import decimal_to_int
from core.units import U64_MAX, ceil_div, f64_to_u64, sat_mul, sat_sub

PAGED_V2_CONCURRENT_LAUNCHES = 2
PAGED_V2_MAX_N_REP = 16
NON_METAL_TARGET_CTAS = 512


def auto_kv_budget_bytes(
    available: int, weights: int, activation: int, inflight: int, factor: float
) -> int:
    """Invert `factor * (W + K) + A + I <= available` for K (paged KV `auto`)."""
    f = factor if math.isfinite(factor) and factor > 1.0 else 1.0
    rest = sat_sub(sat_sub(available, activation), inflight)
    return sat_sub(f64_to_u64(math.floor(float(rest) / f)), weights)


def paged_block_bytes(per_token_batch1: int | None, num_layers: int, block_size: int) -> int | None:
    """Bytes of one paged block of one layer, or None when geometry is missing."""
    if per_token_batch1 is None or num_layers == 0 or block_size == 0:
        return None
    per_layer = per_token_batch1 // num_layers
    if per_layer == 0:
        return None
    return sat_mul(per_layer, block_size)


class BudgetDirectiveKind(enum.Enum):
    """`--kv-cache-budget` forms."""

    DISABLED = "disabled"
    AUTO = "auto"
    BYTES = "bytes"


@dataclass(frozen=True)
class BudgetDirective:
    """A parsed `--kv-cache-budget`."""

    kind: BudgetDirectiveKind
    bytes: int = 0


def parse_budget_directive(text: str) -> BudgetDirective:
    """`auto`, a disable keyword (`none`/`off`/`disabled`/`unbounded`/`0`) or bytes."""
    s = text.strip()
    low = s.lower()
    if low in ("none", "off", "disabled", "unbounded", "0"):
        return BudgetDirective(BudgetDirectiveKind.DISABLED)
    if low == "auto":
        return BudgetDirective(BudgetDirectiveKind.AUTO)
    value = decimal_to_int(s) if s.isascii() and s.isdigit() else None
    if value is not None and value <= U64_MAX:
        return BudgetDirective(BudgetDirectiveKind.BYTES, value)
    raise ValueError(f"--kv-cache-budget: expected auto, none or a byte count, got '{text}'")


def blocks_for_budget(budget: int, per_block: int, workspace: int) -> int:
    """Whole blocks that fit once the v2 workspace reserve is set aside."""
    return sat_sub(budget, workspace) // per_block


def device_target_ctas(gpu_core_count: int | None = None) -> int:
    """512 off Apple; `gpu_core_count * 8` on Metal when the count is known."""
    return gpu_core_count * 8 if gpu_core_count else NON_METAL_TARGET_CTAS


def paged_v2_workspace_reserve_bytes(
    config: ModelConfig | None, batch: int, target_ctas: int = NON_METAL_TARGET_CTAS
) -> int:
    """The paged-decode v2 workspace (the JSON `per_slot_overhead_bytes`)."""
    if config is None:
        return 0
    params = kv_cache_params(config)
    if params is None:
        return 0
    layers, kvh, hd = params
    if layers == 0 or kvh == 0 or hd == 0:
        return 0
    chunks = ceil_div(PAGED_V2_CONCURRENT_LAUNCHES * target_ctas, kvh) + max(batch, 1)
    hq = kvh * PAGED_V2_MAX_N_REP
    return sat_mul(chunks, hq, hd + 1, 4, 2)


# Prompt-cache capacity defaults (snapshot_sizing.rs).
SNAPSHOT_CONTEXT_TOKENS = 8192
SNAPSHOT_TARGET_ENTRIES = 6
SNAPSHOT_AVAILABLE_DENOMINATOR = 4
SNAPSHOT_FLOOR_DENOMINATOR = 2
DEFAULT_MIN_PREFIX_TOKENS = 32
SNAPSHOT_STORE_DEFAULT_BYTES = 536_870_912
KV_STORE_DEFAULT_BYTES = 2_147_483_648


def representative_tokens(context_size: int) -> int:
    """0 means 8192; otherwise the context clamped to [32, 8192]."""
    if context_size == 0:
        return SNAPSHOT_CONTEXT_TOKENS
    return min(max(context_size, DEFAULT_MIN_PREFIX_TOKENS), SNAPSHOT_CONTEXT_TOKENS)


def bounded_capacity(entry: int, current: int, memory_left: int | None) -> int:
    """Six entries, capped at a quarter of what is left, floored at one entry and default."""
    if memory_left == 0:
        return current
    target = sat_mul(SNAPSHOT_TARGET_ENTRIES, entry)
    if memory_left is None:
        return max(target, entry, current)
    ceiling = memory_left // SNAPSHOT_AVAILABLE_DENOMINATOR
    floor_one = entry if entry <= memory_left // SNAPSHOT_FLOOR_DENOMINATOR else 0
    return max(min(target, ceiling), floor_one, current)


def qwen3_next_fixed_state_bytes(config: ModelConfig) -> int:
    """Per-sequence recurrent state of Qwen3-Next / Qwen3.5 linear-attention layers."""
    layers = config.u64(*LAYER_COUNT_KEYS) or 0
    interval = config.u64("full_attention_interval") or 0
    linear = layers - (layers // interval if interval else 0)
    hidden = config.u64(*HIDDEN_SIZE_KEYS)
    heads = config.u64(*NUM_HEADS_KEYS)
    kd = (
        config.u64("linear_key_head_dim")
        or config.u64(*HEAD_DIM_KEYS)
        or (hidden // heads if hidden and heads else None)
        or 128
    )
    vd = config.u64("linear_value_head_dim") or kd
    nk = config.u64("linear_num_key_heads") or 16
    nv = config.u64("linear_num_value_heads") or 64
    conv = config.u64("linear_conv_kernel_dim") or 4
    per_layer = ((nv * vd) * kd + (conv - 1) * (2 * nk * kd + nv * vd)) * 2
    return sat_mul(per_layer, linear)


@dataclass(frozen=True)
class QuantRecommendation:
    """`--recommend-quant`'s answer."""

    quant: str
    reason: str


def recommend_quantization(
    params_billions: float, memory_gb: int, kv_bytes: int | None, neural_accelerator: bool = False
) -> QuantRecommendation:
    """mlxcel's `recommend_quantization` (memory in whole GB; 0 off Apple)."""
    kv_gb = ceil_div(kv_bytes, 1 << 30) if kv_bytes is not None else 2
    fp16_gb = math.ceil(params_billions * 2) + kv_gb
    int8_gb = math.ceil(params_billions * 1) + kv_gb
    int4_gb = math.ceil(params_billions * 0.5) + kv_gb
    if neural_accelerator:
        if int8_gb <= memory_gb:
            return QuantRecommendation("int8", "M5 NA delivers 2x throughput for INT8 vs FP16")
        if int4_gb <= memory_gb:
            return QuantRecommendation(
                "int4", "M5 NA available but 8-bit exceeds memory; 4-bit recommended"
            )
    if fp16_gb <= memory_gb:
        return QuantRecommendation("fp16", "Model fits in memory as FP16; no quantization needed")
    if int4_gb <= memory_gb:
        return QuantRecommendation("int4", "Best balance of speed and memory on this hardware")
    return QuantRecommendation("int4", "Memory constrained; 4-bit required to fit model")
