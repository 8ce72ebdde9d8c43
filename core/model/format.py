"""A short label for how a model's weights are stored, read from its files.

The config's quantization block wins (mlx-lm's `quantization`, then the
Hugging Face `quantization_config`); otherwise the dtype holding the most bytes
in the safetensors headers; otherwise the config's `torch_dtype`. The label is
for display only: the estimate never reads any of this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.display_text import clean_text
from core.model.config import ModelConfig, as_u64

_DTYPE_LABELS = {
    "BF16": "BF16",
    "F16": "F16",
    "F32": "F32",
    "F64": "F64",
    "F8_E4M3": "FP8",
    "F8_E5M2": "FP8",
}
_TORCH_DTYPE_LABELS = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}
_METHOD_LABELS = {
    "gptq": "GPTQ",
    "awq": "AWQ",
    "fp8": "FP8",
    "bitsandbytes": "bitsandbytes",
    "compressed-tensors": "compressed-tensors",
    "mxfp4": "MXFP4",
    "hqq": "HQQ",
    "eetq": "EETQ",
}


def _mlx_label(quant: Mapping[str, Any]) -> str:
    """`MLX 4-bit g64`, `MLX mixed 4/6-bit g64` (per-layer overrides), `MLX mxfp4 4-bit g32`."""
    bits = as_u64(quant.get("bits"))
    group = as_u64(quant.get("group_size"))
    mode = quant.get("mode")
    prefix = "MLX" if not isinstance(mode, str) or mode == "affine" else f"MLX {mode}"
    # Per-layer entries are dicts keyed by module path; `true`/`false` only say whether
    # a layer is quantized with the defaults, so they do not make the model mixed.
    layer_bits = {
        b for v in quant.values() if isinstance(v, Mapping) and (b := as_u64(v.get("bits")))
    }
    if bits is not None and layer_bits - {bits}:
        label = f"{prefix} mixed {'/'.join(str(b) for b in sorted(layer_bits | {bits}))}-bit"
    elif bits is not None:
        label = f"{prefix} {bits}-bit"
    else:
        label = prefix
    return f"{label} g{group}" if group else label


def _hf_quant_label(qc: Mapping[str, Any]) -> str | None:
    """`GPTQ 4-bit g128`, `AWQ 4-bit g128`, `FP8`, `bitsandbytes 4-bit`, ... or None."""
    method = qc.get("quant_method")
    if not isinstance(method, str):
        return None
    name = _METHOD_LABELS.get(method.lower(), method.upper())
    bits = as_u64(qc.get("bits"))
    if bits is None:
        bits = as_u64(qc.get("w_bit"))
    if bits is None and method.lower() == "bitsandbytes":
        bits = (
            4 if qc.get("load_in_4bit") is True else 8 if qc.get("load_in_8bit") is True else None
        )
    group = as_u64(qc.get("group_size"))
    if group is None:
        group = as_u64(qc.get("q_group_size"))
    label = f"{name} {bits}-bit" if bits is not None else name
    return f"{label} g{group}" if group and bits is not None else label


def dtype_label(dtype_bytes: Mapping[str, int]) -> str | None:
    """The float dtype holding the most bytes (`BF16`, `F16`, `FP8`), else the dtypes joined."""
    floats = {d: n for d, n in dtype_bytes.items() if d in _DTYPE_LABELS}
    if floats:
        return _DTYPE_LABELS[max(sorted(floats), key=lambda d: floats[d])]
    return "/".join(sorted(dtype_bytes)) or None


def describe_format(config: ModelConfig | None, dtype_bytes: Mapping[str, int]) -> str:
    """The format label of a model, or `unknown`.

    `dtype_bytes` maps safetensors dtypes to the bytes they hold (from one or more
    headers, or a profile's manifest); it may be empty when no header was read.
    The label is display text built from config strings (`quant_method`,
    `torch_dtype`), so control characters are removed here, once, for every screen.
    """
    return clean_text(_describe_format(config, dtype_bytes))


def _describe_format(config: ModelConfig | None, dtype_bytes: Mapping[str, int]) -> str:
    if config is not None:
        quant = config.root.get("quantization")
        if isinstance(quant, Mapping):
            return _mlx_label(quant)
        qc = config.root.get("quantization_config")
        if isinstance(qc, Mapping) and (label := _hf_quant_label(qc)) is not None:
            return label
    if dtype_bytes and (label := dtype_label(dtype_bytes)) is not None:
        return label
    if config is not None:
        for root in (config.root, config.text):
            dtype = root.get("torch_dtype") or root.get("dtype")
            if isinstance(dtype, str):
                return _TORCH_DTYPE_LABELS.get(dtype, dtype)
    return "unknown"
