"""The families vramscope's mlx-lm load knows, as mlx-lm 0.32.2's model classes hold them.

Per family: the module mlx-lm loads for a `model_type` (`MODEL_REMAPPING`), its
`ModelArgs` defaults for the fields a sparse config leaves out, how the module derives
the head size, and how its `make_cache` lays out the layers (all `KVCache` when the
model has none). Read from `mlx_lm/models/<family>.py`; a `model_type` not listed
here gets the standard cache, and the load says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class HeadDimRule(Enum):
    """How the module sizes one head."""

    CONFIG = "args.head_dim"
    CONFIG_OR_HIDDEN = "args.head_dim or hidden_size // num_attention_heads"
    HIDDEN = "hidden_size // num_attention_heads"


class Layout(Enum):
    """How `make_cache` chooses each layer's cache."""

    ALL_FULL = "a KVCache per layer"
    LAYER_TYPES = "RotatingKVCache(sliding_window) for `sliding_attention` in layer_types"
    PATTERN = "a KVCache every sliding_window_pattern-th layer, RotatingKVCache elsewhere"
    ALTERNATING = "layer_types, else sliding and full alternating"
    LINEAR_INTERVAL = "a KVCache every full_attention_interval-th layer, ArraysCache elsewhere"


class Attention(Enum):
    """What a layer's cache holds per token."""

    STANDARD = "keys and values per KV head"
    MLA_EXPANDED = "MLA expanded: keys (nope + rope) and values per head"
    MLA_LATENT = "MLA latent: kv_lora_rank and the rope keys, one head"


@dataclass(frozen=True)
class Family:
    """One mlx-lm module's rules."""

    module: str
    head_dim: HeadDimRule = HeadDimRule.CONFIG_OR_HIDDEN
    layout: Layout = Layout.ALL_FULL
    attention: Attention = Attention.STANDARD
    defaults: dict[str, int] = field(default_factory=dict)
    """`ModelArgs` defaults of the size fields (absent: the field is required)."""
    kv_heads_default_heads: bool = True
    """`num_key_value_heads` left out is `num_attention_heads` (`__post_init__`)."""
    moe: bool = False
    int8_problem: str = ""
    """Why mlx-lm's `kv_bits` fails for this family (empty: it works)."""
    score_extra_copies: int = 0
    """Copies of the attention scores beyond one at every layer (attention sinks)."""
    window_score_copies: int = 0
    """Further copies at the sliding layers (their array mask: a masked copy)."""


_GEMMA3_TEXT = {
    "hidden_size": 1152,
    "num_hidden_layers": 26,
    "intermediate_size": 6912,
    "num_attention_heads": 4,
    "head_dim": 256,
    "vocab_size": 262144,
    "num_key_value_heads": 1,
    "sliding_window": 512,
    "sliding_window_pattern": 6,
}
_DEEPSEEK = {
    "vocab_size": 102400,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "moe_intermediate_size": 1407,
    "num_hidden_layers": 30,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 128,
}

FAMILIES: dict[str, Family] = {
    "llama": Family("llama", layout=Layout.LAYER_TYPES),
    "ministral3": Family("ministral3", layout=Layout.LAYER_TYPES),
    "qwen2": Family("qwen2", HeadDimRule.HIDDEN),
    "qwen2_moe": Family("qwen2_moe", HeadDimRule.HIDDEN, moe=True),
    "qwen3": Family("qwen3", HeadDimRule.CONFIG),
    "qwen3_moe": Family("qwen3_moe", HeadDimRule.CONFIG, moe=True),
    "mixtral": Family("mixtral", HeadDimRule.HIDDEN, defaults={"num_key_value_heads": 8}, moe=True),
    "phi3": Family("phi3", HeadDimRule.HIDDEN),
    "gemma": Family("gemma", HeadDimRule.CONFIG),
    "gemma2": Family(
        "gemma2",
        HeadDimRule.CONFIG,
        int8_problem="its attention (softcapped, its own) cannot read a QuantizedKVCache",
    ),
    "gemma3_text": Family("gemma3_text", HeadDimRule.CONFIG, Layout.PATTERN, defaults=_GEMMA3_TEXT),
    # The multimodal wrapper: its text_config, with 8 heads and 4 KV heads set where
    # the text_config leaves them out (`gemma3.ModelArgs.__post_init__`).
    "gemma3": Family(
        "gemma3",
        HeadDimRule.CONFIG,
        Layout.PATTERN,
        defaults=_GEMMA3_TEXT | {"num_attention_heads": 8, "num_key_value_heads": 4},
    ),
    "gpt_oss": Family(
        "gpt_oss",
        HeadDimRule.CONFIG,
        Layout.ALTERNATING,
        defaults={
            "num_hidden_layers": 36,
            "vocab_size": 201088,
            "hidden_size": 2880,
            "intermediate_size": 2880,
            "head_dim": 64,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "sliding_window": 128,
            "num_local_experts": 128,
            "num_experts_per_tok": 4,
        },
        moe=True,
        int8_problem="its attention sinks are not supported by the quantized SDPA",
        # The sinks' logits joined to the scores, and the sliding layers' array mask.
        score_extra_copies=1,
        window_score_copies=1,
    ),
    "qwen3_next": Family(
        "qwen3_next",
        HeadDimRule.CONFIG,
        Layout.LINEAR_INTERVAL,
        defaults={"full_attention_interval": 4},
        moe=True,
    ),
    "deepseek_v2": Family(
        "deepseek_v2", attention=Attention.MLA_EXPANDED, defaults=_DEEPSEEK, moe=True
    ),
    "deepseek_v3": Family(
        "deepseek_v3",
        attention=Attention.MLA_LATENT,
        defaults=_DEEPSEEK,
        moe=True,
        int8_problem="its MLA multiplies the cached rope keys, which a QuantizedKVCache "
        "holds packed",
    ),
}

REMAPPING = {
    "mistral": "llama",
    "iquestcoder": "llama",
    "xverse": "llama",
    "joyai_llm_flash": "deepseek_v3",
    "kimi_k2": "deepseek_v3",
}
"""mlx-lm's `MODEL_REMAPPING`, for the families above."""

STANDARD = Family("", HeadDimRule.CONFIG_OR_HIDDEN)
"""A family vramscope does not know: a `KVCache` per layer."""


def mlx_lm_module(model_type: str) -> str:
    """The module mlx-lm 0.32.2 loads for a root `model_type`."""
    return REMAPPING.get(model_type, model_type)


def family_of(model_type: str) -> Family | None:
    """The rules of the module mlx-lm loads for `model_type`, None when vramscope does
    not know it."""
    return FAMILIES.get(mlx_lm_module(model_type))
