"""Tiny models written by mlx and mlx-lm, as mlx-community conversions are.

`write_mlx_model` builds an mlx-lm model from a config, casts it to the dtype
the conversion would use, quantizes it with `mlx_lm.utils.quantize_model`
(per-layer overrides included: qwen3_moe's 8-bit router) and saves it with
`save_model` / `save_config`: the same files `mlx_lm.convert` writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LLAMA_CONFIG: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "intermediate_size": 512,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-5,
    "vocab_size": 512,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
        "rope_type": "llama3",
    },
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}

QWEN3_MOE_CONFIG: dict[str, Any] = {
    "model_type": "qwen3_moe",
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "intermediate_size": 384,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "moe_intermediate_size": 128,
    "norm_topk_prob": True,
    "rms_norm_eps": 1e-6,
    "vocab_size": 384,
    "rope_theta": 1000000.0,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def write_mlx_model(
    dest: Path,
    config: dict[str, Any],
    *,
    bits: int | None = 4,
    group_size: int = 64,
    seed: int = 0,
    router_scale: float = 1.0,
) -> Path:
    """Write a random mlx-lm model (quantized unless `bits` is None) to `dest`."""
    import mlx.core as mx
    from mlx.utils import tree_map
    from mlx_lm.utils import _get_classes, quantize_model, save_config, save_model

    mx.random.seed(seed)
    model_class, args_class = _get_classes(config=config)
    model = model_class(args_class.from_dict(config))
    dtype = {"float16": mx.float16, "bfloat16": mx.bfloat16}.get(config["torch_dtype"], mx.float32)
    # Routing is discontinuous: where two experts' gate logits are closer than the
    # rounding noise of a 16-bit forward pass, either engine may pick either one.
    # A wider router spreads the logits so that such near-ties are rare.
    for layer in getattr(model, "layers", []):
        gate = getattr(getattr(layer, "mlp", None), "gate", None)
        if gate is not None and router_scale != 1.0:
            gate.weight = gate.weight * router_scale
    model.update(tree_map(lambda p: p.astype(dtype), model.parameters()))
    out_config = dict(config)
    if bits is not None:
        model, out_config = quantize_model(model, out_config, group_size, bits)
    mx.eval(model.parameters())
    save_model(dest, model)
    save_config(out_config, config_path=dest / "config.json")
    return dest
