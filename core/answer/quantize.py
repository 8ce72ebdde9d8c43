"""Quantization what-ifs: the weights mlx-lm's own quantization would write, to the byte.

The rule is mlx-lm 0.32.2's `convert -q` (`mlx_lm/convert.py`, `utils.quantize_model`),
restated over a safetensors header's names, dtypes and shapes:

1. `load_model` reads the tensors and the family's `sanitize` drops or renames some
   (precomputed `rotary_emb.inv_freq`; `lm_head.weight` of a tied model; gemma3's
   `vision_tower` and `multi_modal_projector`; qwen3_moe stacks each layer's experts
   into one `switch_mlp` tensor, which changes no byte count).
2. Every floating parameter is cast to the config's `torch_dtype` (else
   `text_config.dtype`) when that is float16, bfloat16 or float32; otherwise dtypes stay.
3. `nn.quantize` replaces each module with `to_quantized` (Linear, Embedding,
   SwitchLinear: here, every kept `*.weight` of two or more dimensions) whose last
   dimension divides by the group size, unless the family's `quant_predicate` says
   otherwise (qwen3_moe's router `mlp.gate`: 8 bits, group 64).
4. A quantized weight of shape `(..., d)` becomes `(..., d * bits / 32)` uint32 words
   plus scales and biases of shape `(..., d / group)` in the weight's dtype (affine mode).
   Layer biases, norms and every other tensor keep their (cast) size.

Only the families whose `sanitize` and `quant_predicate` are restated here get a
number; any other family, an already quantized model or one holding tensors other
than 16/32-bit floats raises `QuantizeUnsupported` with the reason, never a guess.
Pure: no I/O here, and neither mlx nor mlx-lm is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.model.quant_scheme import DEFAULT_GROUP_SIZE, QuantParams, QuantScheme
from core.model.safetensors_header import DTYPE_ITEMSIZE
from core.units import sat_add, sat_mul

MLX_LM_VERSION = "0.32.2"
"""The mlx-lm release whose source the rule restates."""
FLOAT_DTYPES = frozenset({"F16", "BF16", "F32"})
# convert.py's MODEL_CONVERSION_DTYPES, as safetensors dtypes.
_CONVERSION_DTYPES = {"float16": "F16", "bfloat16": "BF16", "float32": "F32"}
_REMAPPED = {"mistral": "llama"}  # mlx_lm.utils.MODEL_REMAPPING, for the families below


class QuantizeUnsupported(ValueError):
    """The what-if cannot be computed for this model; the message says why."""


MLX_8BIT = QuantScheme(QuantParams(8, DEFAULT_GROUP_SIZE))
MLX_4BIT = QuantScheme(QuantParams(4, DEFAULT_GROUP_SIZE))
SCHEMES: Mapping[str, QuantScheme] = {"mlx-8bit": MLX_8BIT, "mlx-4bit": MLX_4BIT}
"""The what-ifs by their `--quantizations` word."""


@dataclass(frozen=True)
class QuantizedWeights:
    """The what-if's weights and how they were counted."""

    bytes: int
    dtype: str | None
    """The dtype floats were cast to (`BF16`, ...), or None when convert keeps them."""
    quantized_tensors: int
    kept_tensors: int
    dropped_tensors: int


Tensor = tuple[str, str, tuple[int, ...]]
"""(name, safetensors dtype, shape), as headers and profiles give them."""
Override = tuple[int, int] | None
"""A per-layer (bits, group size) from a family's `quant_predicate`, or None: defaults."""


@dataclass(frozen=True)
class _Family:
    """What one mlx-lm model file does beyond the common rule."""

    drops: Callable[[str, Mapping[str, Any], frozenset[str]], bool]
    override: Callable[[str], Override] = lambda _path: None


def _tied(config: Mapping[str, Any], default: bool) -> bool:
    value = config.get("tie_word_embeddings", default)
    return value is True


def _llama_drops(default_tied: bool, drop_inv_freq: bool) -> Callable[..., bool]:
    def drops(name: str, config: Mapping[str, Any], _names: frozenset[str]) -> bool:
        if drop_inv_freq and "self_attn.rotary_emb.inv_freq" in name:
            return True
        return name == "lm_head.weight" and _tied(config, default_tied)

    return drops


def _keep_all(_name: str, _config: Mapping[str, Any], _names: frozenset[str]) -> bool:
    return False


def _gemma3_drops(name: str, _config: Mapping[str, Any], _names: frozenset[str]) -> bool:
    # gemma3.Model.sanitize pops the vision tower and the projector; the text model
    # keeps lm_head only when the checkpoint has one (gemma3_text.sanitize).
    return name.startswith(("vision_tower.", "multi_modal_projector."))


def _moe_router(path: str) -> Override:
    return (8, 64) if path.endswith("mlp.gate") else None


_FAMILIES: dict[str, _Family] = {
    # llama.py and qwen2.py: drop inv_freq; tie_word_embeddings defaults to True.
    "llama": _Family(_llama_drops(default_tied=True, drop_inv_freq=True)),
    "qwen2": _Family(_llama_drops(default_tied=True, drop_inv_freq=True)),
    # qwen3.py / qwen3_moe.py: the field has no default; absent reads as untied here.
    "qwen3": _Family(_llama_drops(default_tied=False, drop_inv_freq=False)),
    "qwen3_moe": _Family(_llama_drops(default_tied=False, drop_inv_freq=False), _moe_router),
    "phi3": _Family(_llama_drops(default_tied=False, drop_inv_freq=False)),
    # gemma.py / gemma2.py have no sanitize and no lm_head: the embedding is the head.
    "gemma": _Family(_keep_all),
    "gemma2": _Family(_keep_all),
    "gemma3_text": _Family(_keep_all),
    "gemma3": _Family(_gemma3_drops),
}
SUPPORTED_FAMILIES = tuple(sorted(_FAMILIES))


def conversion_dtype(config: Mapping[str, Any]) -> str | None:
    """The dtype `mlx_lm.convert` casts floats to, or None when it keeps them."""
    dtype = config.get("torch_dtype")
    text = config.get("text_config")
    if dtype is None and isinstance(text, Mapping):
        dtype = text.get("dtype")
    return _CONVERSION_DTYPES.get(dtype) if isinstance(dtype, str) else None


def quantized_tensor_bytes(shape: tuple[int, ...], dtype: str, bits: int, group: int) -> int:
    """Packed uint32 words plus scales and biases (in `dtype`) of one quantized weight."""
    *lead, last = shape
    words = sat_mul(4, *lead, last * bits // 32)
    scales = sat_mul(DTYPE_ITEMSIZE[dtype], *lead, last // group)
    return sat_add(words, scales, scales)


def mlx_quantized_weights(
    tensors: Iterable[Tensor], config: Mapping[str, Any], scheme: QuantScheme
) -> QuantizedWeights:
    """The header sum `mlx_lm.convert -q --q-bits B --q-group-size G` would write.

    Args:
        tensors: Every stored tensor (name, safetensors dtype, shape).
        config: The model's `config.json` root object.
        scheme: Bits and group size.

    Raises:
        QuantizeUnsupported: With the reason, when the rule does not apply.
    """
    if "quantization" in config or "quantization_config" in config:
        raise QuantizeUnsupported("already quantized (the config has a quantization block)")
    model_type = config.get("model_type")
    family = _FAMILIES.get(_REMAPPED.get(str(model_type), str(model_type)))
    if family is None:
        raise QuantizeUnsupported(
            f"mlx-lm's quantization of model_type {str(model_type)!r} is not modelled "
            "by vramscope (docs/fit.md lists the families that are)"
        )
    rows = list(tensors)
    if not rows:
        raise QuantizeUnsupported("no tensor list (no safetensors headers to read)")
    others = sorted({d for _, d, _ in rows} - FLOAT_DTYPES)
    if others:
        raise QuantizeUnsupported(
            f"holds {', '.join(others)} tensors; only 16/32-bit float models are re-quantized"
        )
    cast = conversion_dtype(config)
    names = frozenset(n for n, _, _ in rows)
    total = quantized = kept = dropped = 0
    # 18,867 tensors of a 128-expert model share a handful of shapes: size each once.
    sizes: dict[tuple[tuple[int, ...], str, int, int], int] = {}
    for name, stored, shape in rows:
        if family.drops(name, config, names):
            dropped += 1
            continue
        dtype = cast or stored
        default = scheme.default
        if name.endswith(".weight") and len(shape) >= 2 and shape[-1] % default.group_size == 0:
            bits, group = family.override(name[: -len(".weight")]) or (
                default.bits,
                default.group_size,
            )
            quantized += 1
        else:
            bits = group = 0
            kept += 1
        key = (shape, dtype, bits, group)
        size = sizes.get(key)
        if size is None:
            size = sizes[key] = (
                quantized_tensor_bytes(shape, dtype, bits, group)
                if bits
                else sat_mul(DTYPE_ITEMSIZE[dtype], *shape)
            )
        total = sat_add(total, size)
    return QuantizedWeights(total, cast, quantized, kept, dropped)
