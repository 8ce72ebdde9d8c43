"""The attention dimensions a cache is sized by: the weights' shapes first, then
`config.json`, then the family's defaults as mlx-lm's model class holds them.

A linear layer is stored `[out, in]`; MLX's quantized layers store the packed weight
`[out, in * bits / 32]` (uint32) and `scales` `[out, in / group_size]`, so the output
width (the KV width) is the first dimension either way, and the input width is read
back through the bits. Every figure used comes back as a `Sourced`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.load.load import Origin, Sourced
from core.model.config import ModelConfig, as_u64
from core.model.safetensors_header import DTYPE_ITEMSIZE

Tensor = tuple[str, str, tuple[int, ...]]

_LAYER_TENSOR = re.compile(
    r"(?:^|\.)layers\.(\d+)\.(?:self_attn|attention|attn|linear_attn)\.([A-Za-z0-9_.]+?)"
    r"(?:\.(weight|scales))?$"
)
_PARTS = frozenset(
    {
        "k_proj",
        "v_proj",
        "q_proj",
        "q_b_proj",
        "o_proj",
        "qkv_proj",
        "k_norm",
        "kv_a_proj_with_mqa",
        "kv_a_layernorm",
        "A_log",
        "conv1d",
        "in_proj_qkvz",
    }
)
_TORCH_DTYPES = {"bfloat16": 2, "float16": 2, "float32": 4, "half": 2, "float": 4}


@dataclass(frozen=True)
class Stored:
    """One stored linear's shape and dtype (its scales' dtype when it is quantized)."""

    shape: tuple[int, ...]
    dtype: str
    quantized: bool = False
    scales_dtype: str | None = None

    @property
    def out_features(self) -> int:
        return self.shape[0] if self.shape else 0

    def in_features(self, bits: int | None) -> int | None:
        """The input width (a packed uint32 weight: `cols * 32 / bits`)."""
        if len(self.shape) < 2:
            return None
        if self.quantized:
            return None if not bits else self.shape[1] * 32 // bits
        return self.shape[1]

    @property
    def activation_bytes(self) -> int | None:
        """The dtype MLX computes this layer in: its own, or its scales' when packed."""
        dtype = self.scales_dtype if self.quantized else self.dtype
        return DTYPE_ITEMSIZE.get(dtype or "") if dtype in ("BF16", "F16", "F32") else None


def layer_tensors(tensors: Sequence[Tensor]) -> dict[int, dict[str, Stored]]:
    """Per layer index, the attention tensors by part (`k_proj`, `kv_a_layernorm`...)."""
    weights: dict[tuple[int, str], Tensor] = {}
    scales: dict[tuple[int, str], str] = {}
    for name, dtype, shape in tensors:
        m = _LAYER_TENSOR.search(name)
        if m is None or m.group(2) not in _PARTS:
            continue
        key = (int(m.group(1)), m.group(2))
        if m.group(3) == "scales":
            scales[key] = dtype
        elif key not in weights:
            weights[key] = (name, dtype, tuple(shape))
    out: dict[int, dict[str, Stored]] = {}
    for (layer, part), (_, dtype, shape) in weights.items():
        packed = dtype == "U32" and (layer, part) in scales
        out.setdefault(layer, {})[part] = Stored(shape, dtype, packed, scales.get((layer, part)))
    return out


@dataclass(frozen=True)
class ConfigView:
    """The config's fields as mlx-lm's `ModelArgs` reads them, with the family's defaults."""

    config: ModelConfig | None
    defaults: Mapping[str, int]

    def get(self, key: str) -> Sourced | None:
        """A size field: the config's, else the family's default, else None."""
        if self.config is not None:
            value = as_u64(self.config.text.get(key))
            if value is not None:
                return Sourced(key, value, Origin.CONFIG)
        if key in self.defaults:
            return Sourced(key, self.defaults[key], Origin.FAMILY_DEFAULT, "mlx-lm's ModelArgs")
        return None

    def raw(self, key: str) -> object:
        """A field as written in the text view (lists, strings), None when absent."""
        return None if self.config is None else self.config.text.get(key)

    @property
    def quantization_bits(self) -> int | None:
        """`quantization.bits` (root or text view), for packed MLX weights."""
        if self.config is None:
            return None
        for obj in (self.config.root, self.config.text):
            q = obj.get("quantization") or obj.get("quantization_config")
            if isinstance(q, Mapping):
                bits = as_u64(q.get("bits"))
                if bits:
                    return bits
        return None

    @property
    def dtype_bytes(self) -> Sourced | None:
        """`torch_dtype` (or `dtype`) as a size, when the weights give none."""
        if self.config is None:
            return None
        for obj in (self.config.text, self.config.root):
            for key in ("torch_dtype", "dtype"):
                value = obj.get(key)
                if isinstance(value, str) and value.lower() in _TORCH_DTYPES:
                    return Sourced(
                        "kv_dtype_bytes", _TORCH_DTYPES[value.lower()], Origin.CONFIG, value
                    )
        return None
