"""The KV-cache term: classify the attention architecture, then size it per context.

Classification (first match wins): pure SSM, MLA (compressed latent for `v3`
model types, decompressed per-head K/V otherwise), hybrid attention + recurrent,
sliding window, standard. Each class becomes groups of layers with a number of
K+V elements per token and an optional window; bytes then follow from the
context rounded up to mlx-lm's 256-token allocation step.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from core.model.config import (
    HEAD_DIM_KEYS,
    HIDDEN_SIZE_KEYS,
    LAYER_COUNT_KEYS,
    MULTI_QUERY_KEY,
    NUM_HEADS_KEYS,
    NUM_KV_HEADS_KEYS,
    JsonObject,
    ModelConfig,
    as_u64,
    get_u64,
)
from core.units import ceil_div, sat_add, sat_mul

KV_CACHE_ALLOC_STEP = 256
PURE_SSM_MODEL_TYPES = frozenset({"mamba", "mamba2", "falcon_mamba"})
UNAVAILABLE_DETAIL = "unavailable (config.json missing architecture fields)"


class KvKind(enum.Enum):
    """The architecture classes, with mlxcel's `KvArchKind` labels."""

    STANDARD = "standard attention"
    SLIDING_WINDOW = "sliding-window attention"
    MLA_COMPRESSED = "MLA (compressed latent)"
    MLA_DECOMPRESSED = "MLA (decompressed)"
    HYBRID = "hybrid attention + recurrent"
    PURE_SSM = "pure SSM (no KV cache)"


@dataclass(frozen=True)
class KvGroup:
    """Layers that share a per-token K+V element count and an optional window."""

    layers: int
    elems_per_token: int
    window: int | None = None


@dataclass(frozen=True)
class KvArch:
    """A classified architecture: computed once per model, sized per context."""

    kind: KvKind
    groups: tuple[KvGroup, ...]
    detail: str


@dataclass(frozen=True)
class KvTerm:
    """The KV term at one context, batch and dtype."""

    bytes: int
    per_token_bytes: int
    """Marginal bytes per extra token (unwindowed groups only), scaled by batch."""
    detail: str
    kind: KvKind | None
    """None when the architecture is unavailable (KV source `Unavailable`)."""

    @property
    def available(self) -> bool:
        """True when the config gave the architecture (mlxcel's `KvSource::Config`)."""
        return self.kind is not None


def round_ctx(tokens: int) -> int:
    """Round a context up to the 256-token allocation step (saturating)."""
    return sat_mul(ceil_div(tokens, KV_CACHE_ALLOC_STEP), KV_CACHE_ALLOC_STEP)


def resolve_num_kv_heads(text: JsonObject, num_heads: int) -> int:
    """A numeric KV-head key, else 1 for `multi_query: true`, else the query heads."""
    kvh = get_u64(text, NUM_KV_HEADS_KEYS)
    if kvh is not None:
        return kvh
    if text.get(MULTI_QUERY_KEY) is True:
        return 1
    return num_heads


def attn_dims(text: JsonObject) -> tuple[int, int] | None:
    """(KV heads, head dim) for standard-style layers, or None without hidden size."""
    nh = max(get_u64(text, NUM_HEADS_KEYS) or 1, 1)
    kvh = resolve_num_kv_heads(text, nh)
    hd = get_u64(text, HEAD_DIM_KEYS)
    if hd is None:
        hidden = get_u64(text, HIDDEN_SIZE_KEYS)
        if hidden is None:
            return None
        hd = hidden // nh
    return kvh, hd


def _count_multiples(start: int, stop: int, offset: int, period: int) -> int:
    """Count i in [start, stop) with (i + offset) % period == 0, in O(1)."""
    if stop <= start:
        return 0
    first = start + (-(start + offset)) % period
    return 0 if first >= stop else (stop - 1 - first) // period + 1


def _count_congruent(layers: int, offset: int, period: int) -> int:
    """Count i in [0, layers) with ((i + offset) mod 2^64) % period == 0.

    mlxcel's release build adds on u64 and wraps: from i = 2^64 - offset on,
    the sum starts again at 0.
    """
    wrap_at = (1 << 64) - offset
    return _count_multiples(0, min(layers, wrap_at), offset, period) + _count_multiples(
        wrap_at, layers, offset - (1 << 64), period
    )


def count_attention_layers(text: JsonObject, layers: int) -> int | None:
    """The attention layers of a hybrid model by mlxcel's four rules, else None."""
    for key in ("layers_block_type", "block_types"):
        entries = text.get(key)
        if isinstance(entries, list):
            return sum(
                1
                for e in entries
                if isinstance(e, str) and ("attention" in e.lower() or e.lower() in ("attn", "*"))
            )
    pattern = text.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return pattern.count("*")
    if isinstance(pattern, list):
        return sum(1 for e in pattern if e == "*")
    period = as_u64(text.get("attn_layer_period"))
    if period:
        offset = as_u64(text.get("attn_layer_offset")) or 0
        return _count_congruent(layers, offset, period)
    interval = as_u64(text.get("full_attention_interval"))
    if interval:
        full = layers // interval  # i + 1 in [1, layers] divisible by the interval
        mlp_only = text.get("mlp_only_layers")
        if isinstance(mlp_only, list):
            skipped = {
                i
                for i in (as_u64(v) for v in mlp_only)
                if i is not None and i < layers and (i + 1) % interval == 0
            }
            full -= len(skipped)
        return full
    return None


def _sliding_groups(
    elems: int, window: int, global_layers: int, sliding: int
) -> tuple[KvGroup, ...]:
    groups: list[KvGroup] = []
    if global_layers > 0:
        groups.append(KvGroup(global_layers, elems, None))
    if sliding > 0:
        groups.append(KvGroup(sliding, elems, window))
    return tuple(groups)


def _sliding_detail(sliding: int, window: int, global_layers: int) -> str:
    return (
        f"sliding-window: {sliding} layer(s) capped at {window if sliding else 0} tokens, "
        f"{global_layers} global"
    )


def _standard(layers: int, elems: int) -> KvArch:
    return KvArch(
        KvKind.STANDARD,
        (KvGroup(layers, elems, None),),
        f"standard attention ({layers} layers, full context)",
    )


def classify_kv_arch(config: ModelConfig) -> KvArch | None:
    """mlxcel's `estimate_kv_arch` classification, or None when fields are missing."""
    text = config.text
    layers = get_u64(text, LAYER_COUNT_KEYS)
    if layers is None:
        return None
    model_type = config.model_type
    if model_type in PURE_SSM_MODEL_TYPES:
        return KvArch(KvKind.PURE_SSM, (), "pure SSM — no KV cache")

    kv_lora_rank = as_u64(text.get("kv_lora_rank"))
    if kv_lora_rank is not None:
        rope = as_u64(text.get("qk_rope_head_dim"))
        rope = 64 if rope is None else rope
        if "v3" in model_type:
            elems = sat_add(kv_lora_rank, rope)
            return KvArch(
                KvKind.MLA_COMPRESSED,
                (KvGroup(layers, elems),),
                f"MLA compressed latent ({elems} elems/token/layer, shared across heads)",
            )
        nh = max(get_u64(text, NUM_HEADS_KEYS) or 1, 1)
        nope = as_u64(text.get("qk_nope_head_dim"))
        v_dim = as_u64(text.get("v_head_dim"))
        per_head = sat_add(128 if nope is None else nope, rope, 128 if v_dim is None else v_dim)
        return KvArch(
            KvKind.MLA_DECOMPRESSED,
            (KvGroup(layers, sat_mul(nh, per_head)),),
            "MLA decompressed per-head K/V (DeepSeek-V2 style)",
        )

    dims = attn_dims(text)
    if dims is None:
        return None
    kvh, hd = dims
    elems = sat_mul(2, kvh, hd)

    n_attn = count_attention_layers(text, layers)
    if n_attn is not None:
        window = as_u64(text.get("attention_window_size"))
        detail = (
            f"hybrid: {n_attn} attention layer(s), windowed"
            if window is not None
            else f"hybrid: {n_attn} attention layer(s) hold KV (rest recurrent/SSM)"
        )
        return KvArch(KvKind.HYBRID, (KvGroup(n_attn, elems, window),), detail)

    window = as_u64(text.get("sliding_window"))
    if window:
        layer_types = text.get("layer_types")
        if isinstance(layer_types, list):
            strings = [t for t in layer_types if isinstance(t, str)]
            if strings:
                global_layers = sum(1 for t in strings if t.lower() == "full_attention")
                sliding = len(strings) - global_layers
                return KvArch(
                    KvKind.SLIDING_WINDOW,
                    _sliding_groups(elems, window, global_layers, sliding),
                    _sliding_detail(sliding, window, global_layers),
                )
        pattern = max(as_u64(text.get("sliding_window_pattern")) or 1, 1)
        global_layers = layers // pattern
        sliding = layers - global_layers
        if sliding > 0:
            return KvArch(
                KvKind.SLIDING_WINDOW,
                _sliding_groups(elems, window, global_layers, sliding),
                _sliding_detail(sliding, window, global_layers),
            )
    return _standard(layers, elems)


def kv_term(arch: KvArch | None, ctx_len: int, int8: bool, batch: int) -> KvTerm:
    """Size a classified architecture at a context, dtype and batch."""
    if arch is None:
        return KvTerm(0, 0, UNAVAILABLE_DETAIL, None)
    eb = 1 if int8 else 2
    rounded = round_ctx(ctx_len)
    total = 0
    marginal = 0
    for group in arch.groups:
        eff = rounded if group.window is None else min(rounded, round_ctx(group.window))
        total = sat_add(total, sat_mul(group.layers, group.elems_per_token, eff, eb, batch))
        if group.window is None:
            marginal = sat_add(marginal, sat_mul(group.layers, group.elems_per_token, eb, batch))
    return KvTerm(total, marginal, arch.detail, arch.kind)


def kv_cache_bytes(
    layers: int, kv_heads: int, head_dim: int, elem_bytes: int, ctx: int, batch: int
) -> int:
    """The legacy flat formula `L * 2 * KVH * HD * eb * round_ctx(ctx) * batch`."""
    return sat_mul(layers, 2, kv_heads, head_dim, elem_bytes, round_ctx(ctx), batch)


def kv_cache_params(config: ModelConfig) -> tuple[int, int, int] | None:
    """mlxcel's `kv_cache_params_from_path`: (layers, KV heads, head dim) or None."""
    text = config.text
    layers = get_u64(text, LAYER_COUNT_KEYS)
    if layers is None:
        return None
    nh = get_u64(text, NUM_HEADS_KEYS)
    nh = 1 if nh is None else nh
    kvh = resolve_num_kv_heads(text, nh)
    hd = get_u64(text, HEAD_DIM_KEYS)
    if hd is None:
        hidden = get_u64(text, HIDDEN_SIZE_KEYS)
        if hidden is None:
            return None
        hd = hidden // nh if nh else 64
    return layers, kvh, hd
