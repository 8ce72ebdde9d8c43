"""The decoder architecture the engine runs, read from `config.json` (no torch here).

The engine covers the families of the measured models and reads their configs
the way mlx-lm does: `mistral` runs as `llama` (mlx-lm maps it so, and ignores
its sliding window), `qwen2` has q/k/v biases, `qwen3` q/k norms, `qwen3_moe`
routed experts. Anything else raises `UnsupportedModelError`, so the estimate
still works while the measurement says plainly that it cannot run.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.model.config import ModelConfig, as_f64, as_u64
from core.model.quant_scheme import QuantParams, QuantScheme
from hip_backend.errors import BadModelError, UnsupportedModelError

SUPPORTED_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe")
SUPPORTED_BITS = (2, 4, 8)
"""MLX affine widths whose packing is byte aligned (checked against mx.dequantize)."""


class RopeKind(enum.Enum):
    """The rope scalings the torch engine runs (config.json's `rope_type`)."""

    DEFAULT = "default"
    LLAMA3 = "llama3"
    LINEAR = "linear"


SUPPORTED_ROPE = tuple(k.value for k in RopeKind)


@dataclass(frozen=True)
class RopeSpec:
    """Rotary embedding: base, and Llama 3 or linear scaling when configured."""

    theta: float
    kind: RopeKind = RopeKind.DEFAULT
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192


@dataclass(frozen=True)
class MoeSpec:
    """Routed experts of `qwen3_moe`."""

    num_experts: int
    top_k: int
    intermediate_size: int
    norm_topk_prob: bool
    sparse_step: int
    mlp_only_layers: frozenset[int]


@dataclass(frozen=True)
class ArchSpec:
    """Everything the engine needs to build a decoder, in mlx-lm's terms."""

    family: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    rms_norm_eps: float
    rope: RopeSpec
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    qk_norm: bool
    tie_embeddings: bool
    moe: MoeSpec | None
    quant: QuantScheme | None
    float_dtype: str
    """safetensors dtype of float weights (and of scales when quantized): F16, BF16, F32."""

    def layer_is_moe(self, index: int) -> bool:
        """mlx-lm's rule: not in `mlp_only_layers` and `(i + 1) % decoder_sparse_step == 0`."""
        moe = self.moe
        return (
            moe is not None
            and moe.num_experts > 0
            and index not in moe.mlp_only_layers
            and (index + 1) % moe.sparse_step == 0
        )


def _int(cfg: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = as_u64(cfg.get(key))
    if value is None:
        if default is not None and cfg.get(key) is None:
            return default
        raise BadModelError(f"config.json: '{key}' must be a non-negative integer")
    return value


def _float(cfg: Mapping[str, Any], key: str, default: float) -> float:
    value = cfg.get(key)
    if value is None:
        return default
    number = as_f64(value)
    if number is None:
        raise BadModelError(f"config.json: '{key}' must be a number")
    return number


def _rope(cfg: Mapping[str, Any]) -> RopeSpec:
    # transformers 5 nests both under `rope_parameters`; mlx-lm reads either place.
    params = cfg.get("rope_parameters")
    params = params if isinstance(params, Mapping) else {}
    theta = _float(cfg, "rope_theta", _float(params, "rope_theta", 10000.0))
    scaling = cfg.get("rope_scaling")
    if not isinstance(scaling, Mapping):
        scaling = params if params.get("rope_type") not in (None, "default") else None
    if scaling is None:
        return RopeSpec(theta)
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in SUPPORTED_ROPE:
        raise UnsupportedModelError(f"rope scaling '{kind}' is not supported for measurement")
    return RopeSpec(
        theta=theta,
        kind=RopeKind(kind),
        factor=_float(scaling, "factor", 1.0),
        low_freq_factor=_float(scaling, "low_freq_factor", 1.0),
        high_freq_factor=_float(scaling, "high_freq_factor", 4.0),
        original_max_position_embeddings=_int(scaling, "original_max_position_embeddings", 8192),
    )


def _quant_params(value: Any, where: str) -> QuantParams:
    if not isinstance(value, Mapping):
        raise BadModelError(f"config.json: quantization {where} is not an object")
    mode = value.get("mode", "affine")
    if mode != "affine":
        raise UnsupportedModelError(f"MLX '{mode}' quantization is not supported for measurement")
    bits = _int(value, "bits")
    group = _int(value, "group_size")
    if bits not in SUPPORTED_BITS:
        raise UnsupportedModelError(
            f"{bits}-bit MLX quantization is not supported for measurement (2, 4 and 8 are)"
        )
    if group == 0:
        raise BadModelError(f"config.json: quantization {where} has group_size 0")
    return QuantParams(bits, group)


def _quant(root: Mapping[str, Any]) -> QuantScheme | None:
    block = root.get("quantization")
    if block is None:
        qc = root.get("quantization_config")
        if isinstance(qc, Mapping) and qc.get("quant_method") is not None:
            raise UnsupportedModelError(
                f"{qc.get('quant_method')} quantization is not supported for measurement"
            )
        return None
    if not isinstance(block, Mapping):
        raise BadModelError("config.json: 'quantization' is not an object")
    default = _quant_params(block, "block")
    overrides: dict[str, QuantParams | None] = {}
    for key, value in block.items():
        if key in ("bits", "group_size", "mode"):
            continue
        if value is False:
            overrides[key] = None
        elif value is True:
            overrides[key] = default
        elif isinstance(value, Mapping):
            overrides[key] = _quant_params(value, f"override '{key}'")
    return QuantScheme(default, overrides)


_TORCH_DTYPE_NAMES = {"float16": "F16", "bfloat16": "BF16", "float32": "F32"}


def _float_dtype(root: Mapping[str, Any]) -> str:
    name = root.get("torch_dtype", root.get("dtype"))
    return _TORCH_DTYPE_NAMES.get(name, "BF16") if isinstance(name, str) else "BF16"


def arch_from_config(config: ModelConfig) -> ArchSpec:
    """The engine's view of a config; raises UnsupportedModelError or BadModelError."""
    root = config.root
    family = config.model_type
    if "text_config" in root or family not in SUPPORTED_FAMILIES:
        shown = family or "unknown"
        raise UnsupportedModelError(
            f"model type '{shown}' is not supported for measurement "
            f"(supported: {', '.join(SUPPORTED_FAMILIES)}); the estimate still works"
        )
    if family == "qwen2" and root.get("use_sliding_window") is True:
        raise UnsupportedModelError("qwen2 with use_sliding_window is not supported")
    hidden = _int(root, "hidden_size")
    heads = _int(root, "num_attention_heads")
    if heads == 0 or hidden == 0:
        raise BadModelError("config.json: hidden_size and num_attention_heads must be positive")
    kv_heads = _int(root, "num_key_value_heads", heads)
    head_dim = _int(root, "head_dim", hidden // heads)
    if kv_heads == 0 or heads % kv_heads:
        raise BadModelError(
            f"config.json: {heads} attention heads do not split into {kv_heads} KV heads"
        )
    moe = None
    if family == "qwen3_moe":
        only = root.get("mlp_only_layers") or []
        if not isinstance(only, list) or not all(as_u64(i) is not None for i in only):
            raise BadModelError("config.json: 'mlp_only_layers' must be a list of layer indices")
        moe = MoeSpec(
            num_experts=_int(root, "num_experts"),
            top_k=_int(root, "num_experts_per_tok"),
            intermediate_size=_int(root, "moe_intermediate_size"),
            norm_topk_prob=bool(root.get("norm_topk_prob", False)),
            sparse_step=max(1, _int(root, "decoder_sparse_step", 1)),
            mlp_only_layers=frozenset(int(i) for i in only),
        )
        if moe.top_k == 0 or moe.top_k > moe.num_experts:
            raise BadModelError("config.json: num_experts_per_tok must be in [1, num_experts]")
    attention_bias = bool(root.get("attention_bias", False))
    tie_default = family != "qwen3_moe"  # mlx-lm's ModelArgs defaults
    tie = root.get("tie_word_embeddings", tie_default)
    return ArchSpec(
        family="llama" if family == "mistral" else family,
        hidden_size=hidden,
        num_layers=_int(root, "num_hidden_layers"),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=_int(root, "intermediate_size"),
        vocab_size=_int(root, "vocab_size"),
        rms_norm_eps=_float(root, "rms_norm_eps", 1e-6),
        rope=_rope(root),
        qkv_bias=family == "qwen2" or (family in ("llama", "mistral") and attention_bias),
        o_bias=family in ("llama", "mistral") and attention_bias,
        mlp_bias=family in ("llama", "mistral") and bool(root.get("mlp_bias", False)),
        qk_norm=family in ("qwen3", "qwen3_moe"),
        tie_embeddings=bool(tie),
        moe=moe,
        quant=_quant(root),
        float_dtype=_float_dtype(root),
    )
