"""Tensor lists for profiles whose real header list is not at hand, from mlx-lm itself.

mlx-lm's own model class for the config is built with lazy arrays (nothing is
evaluated, so an 80B model costs no memory), cast to the repo's dtype and, for a
quantized repo, quantized by `mlx_lm.utils.quantize_model` (what `mlx_lm.convert`
runs, with the family's own `quant_predicate`). Its parameters are the tensors
`mlx_lm.convert` writes: names, dtypes and shapes. For a Hugging Face repo the names
and shapes are mapped back to the checkpoint's own (`sanitize` undone), so the
profile reads like the real repo's headers.

The check made for each: the parameter count against the model card's, within the
stated tolerance. What mlx-lm does not model is left out and said (`omitted`).
A developer step (`scripts/build_profiles.py` calls it); never run by vramscope.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

DTYPES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32", "uint32": "U32"}


@dataclass(frozen=True)
class Derivation:
    dtype: str
    """The repo's float dtype (`float16`, `bfloat16`)."""
    naming: str
    """`mlx` (what mlx_lm.convert writes) or `hf` (the Hugging Face checkpoint's)."""
    card_params: float
    """Parameters on the model card (for the check), counting what mlx-lm models."""
    card: str
    """Where that figure is from."""
    omitted: str = ""
    """What the real repo holds that mlx-lm's class does not (not in the list)."""
    absent: tuple[str, ...] = ()
    """Modules mlx-lm builds but its `sanitize` pops when the checkpoint lacks them."""
    tolerance: float = 0.02


DERIVED = {
    "mlx-community__gemma-2-2b-it-fp16": Derivation(
        "float16",
        "mlx",
        2.61e9,
        "google/gemma-2-2b-it model card: 2.61B parameters",
    ),
    "mlx-community__gemma-3-4b-pt-4bit": Derivation(
        "bfloat16",
        "mlx",
        3.88e9,
        "google/gemma-3-4b-pt: 4.3B parameters, of which the SigLIP vision tower is 0.42B "
        "(text model 3.88B)",
        omitted="the vision tower and projector (mlx-lm loads the text model only)",
        # Gemma 3 ties its output head to the embeddings: the checkpoint has no
        # lm_head, and gemma3_text's sanitize pops the one the class builds.
        absent=("language_model.lm_head",),
    ),
    "Qwen__Qwen3-Next-80B-A3B-Instruct": Derivation(
        "bfloat16",
        "hf",
        80e9,
        "Qwen/Qwen3-Next-80B-A3B-Instruct model card: 80B parameters in total, 3B active",
        omitted="the multi-token-prediction layer (`mtp.*`, dropped by mlx-lm's sanitize)",
    ),
}


def derive(stem: str, config: dict[str, Any]) -> dict[str, Any]:
    """The `tensors.json` data (docs/models.md) mlx-lm gives for this config."""
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.utils import _get_classes, quantize_model

    how = DERIVED[stem]
    cfg = copy.deepcopy(config)
    quantization = cfg.pop("quantization", None)
    model_class, args_class = _get_classes(cfg)
    model = model_class(args_class.from_dict(cfg))
    for path in how.absent:
        parent, _, leaf = path.rpartition(".")
        owner = model
        for part in parent.split(".") if parent else ():
            owner = getattr(owner, part)
        owner.pop(leaf)
        if hasattr(owner, "tie_word_embeddings"):
            owner.tie_word_embeddings = True
    model.set_dtype(getattr(mx, how.dtype))
    # The parameter count is taken before quantizing (one value per weight).
    params = sum(array.size for _, array in tree_flatten(model.parameters()))
    if quantization:
        model, _ = quantize_model(model, cfg, quantization["group_size"], quantization["bits"])
    tensors: list[list[Any]] = []
    for name, array in tree_flatten(model.parameters()):
        dtype = DTYPES[str(array.dtype).split(".")[-1]]
        tensors.extend(_named(how, name, dtype, tuple(array.shape)))
    if abs(params - how.card_params) > how.tolerance * how.card_params:
        raise ValueError(
            f"{stem}: mlx-lm's class has {params:,} parameters, the card says "
            f"{how.card_params:,.0f} ({how.card})"
        )
    total = sum(_nbytes(d, s) for _, d, s in tensors)
    fmt = "mlx" if how.naming == "mlx" else "pt"
    return {
        "total_bytes": total,
        "tensor_count": len(tensors),
        "header_metadata": {"format": fmt},
        "shards": None,
        "tensors": tensors,
        "parameters": params,
    }


def _size(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _nbytes(dtype: str, shape: Any) -> int:
    return _size(shape) * {"BF16": 2, "F16": 2, "F32": 4, "U32": 4}[dtype]


_STACKED = re.compile(r"^(model\.layers\.\d+\.mlp)\.switch_mlp\.(\w+)\.weight$")


def _named(how: Derivation, name: str, dtype: str, shape: tuple[int, ...]) -> list[list[Any]]:
    """One mlx-lm parameter as the repo stores it: as is for `mlx` naming; for `hf`,
    the experts unstacked and conv1d back to `[C, 1, K]` (qwen3_next's sanitize undone)."""
    if how.naming == "mlx":
        return [[name, dtype, list(shape)]]
    stacked = _STACKED.match(name)
    if stacked:
        prefix, proj = stacked.groups()
        return [
            [f"{prefix}.experts.{e}.{proj}.weight", dtype, list(shape[1:])] for e in range(shape[0])
        ]
    if name.endswith("conv1d.weight") and len(shape) == 3 and shape[-1] == 1:
        return [[name, dtype, [shape[0], shape[2], shape[1]]]]
    return [[name, dtype, list(shape)]]
