"""Tiny float models in Hugging Face layout, and what mlx-lm's quantization makes of them.

Run as `python -m tests.core.answer.mlx_convert OUT` (the tests start it in a child
process, so the test process never imports mlx). For each family it writes
`OUT/<family>/stored` (random weights, the tensor names a Hugging Face checkpoint
has) and `OUT/<family>/mlx-4bit`, `OUT/<family>/mlx-8bit`: the steps of
`mlx_lm.convert -q` (load and sanitize, cast to `torch_dtype`, `quantize_model`,
`save_model`), without the tokenizer it would also copy.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.hip_backend.mlx_models import LLAMA_CONFIG, QWEN3_MOE_CONFIG, write_mlx_model

GEMMA3_TEXT: dict[str, Any] = {
    "model_type": "gemma3_text",
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "intermediate_size": 256,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "vocab_size": 320,
    "sliding_window": 64,
    "sliding_window_pattern": 2,
}

FAMILIES: dict[str, dict[str, Any]] = {
    # Untied head, bf16; the checkpoint also ships precomputed rotary freqs (dropped).
    "llama": {**LLAMA_CONFIG, "torch_dtype": "bfloat16"},
    # Per-expert tensors (stacked by sanitize), a down_proj of width 96 (not a multiple
    # of 64: kept in bf16), a tied head whose stored copy sanitize drops, an 8-bit router.
    "qwen3_moe": {**QWEN3_MOE_CONFIG, "moe_intermediate_size": 96, "tie_word_embeddings": True},
    # Multimodal gemma3: the vision tower and projector are dropped, the embedding is tied.
    "gemma3": {
        "model_type": "gemma3",
        "vocab_size": 320,
        "text_config": GEMMA3_TEXT,
        "torch_dtype": "bfloat16",
    },
    # gemma2 stored in float32, as google/gemma-2-2b-it's config says: scales in float32.
    "gemma2": {
        "model_type": "gemma2",
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "intermediate_size": 320,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 64,
        "rms_norm_eps": 1e-6,
        "vocab_size": 256,
        "torch_dtype": "float32",
    },
}


def _to_hf_layout(folder: Path, family: str, config: dict[str, Any]) -> None:
    """Rename and add tensors so the folder reads like the Hub checkpoint."""
    import mlx.core as mx

    path = folder / "model.safetensors"
    weights = dict(mx.load(str(path)))
    if family == "llama":
        for layer in range(config["num_hidden_layers"]):
            name = f"model.layers.{layer}.self_attn.rotary_emb.inv_freq"
            weights[name] = mx.ones((16,), dtype=mx.float32)
    if family == "qwen3_moe":
        for name in [n for n in weights if ".mlp.switch_mlp." in n]:
            stacked = weights.pop(name)
            head, proj = name.split(".mlp.switch_mlp.")
            for e in range(stacked.shape[0]):
                weights[f"{head}.mlp.experts.{e}.{proj}"] = stacked[e]
        weights["lm_head.weight"] = weights["model.embed_tokens.weight"]
    if family == "gemma3":
        weights.pop("language_model.lm_head.weight", None)  # the Hub checkpoint has none
        weights["vision_tower.vision_model.embeddings.patch_embedding.weight"] = mx.zeros(
            (64, 14, 14, 3), dtype=mx.bfloat16
        )
        weights["multi_modal_projector.mm_input_projection_weight"] = mx.zeros(
            (64, 128), dtype=mx.bfloat16
        )
    mx.save_safetensors(str(path), weights)
    (folder / "model.safetensors.index.json").unlink(missing_ok=True)


def convert(src: Path, dest: Path, bits: int, group_size: int = 64) -> None:
    """`mlx_lm.convert --quantize --q-bits bits --q-group-size group_size`, step by step."""
    import mlx.core as mx
    from mlx.utils import tree_map_with_path
    from mlx_lm.convert import MODEL_CONVERSION_DTYPES
    from mlx_lm.utils import load_model, quantize_model, save_config, save_model

    model, config = load_model(src, lazy=True)
    dtype = config.get("torch_dtype", None)
    if dtype is None and (text_config := config.get("text_config", None)):
        dtype = text_config.get("dtype", None)
    if dtype in MODEL_CONVERSION_DTYPES:
        target = getattr(mx, dtype)
        cast_predicate = getattr(model, "cast_predicate", lambda _: True)

        def set_dtype(k: str, v: Any) -> Any:
            if cast_predicate(k) and mx.issubdtype(v.dtype, mx.floating):
                return v.astype(target)
            return v

        model.update(tree_map_with_path(set_dtype, model.parameters()))
    model, config = quantize_model(model, config, group_size, bits)
    save_model(dest, model)
    save_config(config, config_path=dest / "config.json")


def main(out: Path) -> None:
    """Write every family's stored folder and its 4- and 8-bit conversions."""
    for family, config in FAMILIES.items():
        stored = out / family / "stored"
        write_mlx_model(stored, config, bits=None)
        _to_hf_layout(stored, family, config)
        (stored / "config.json").write_text(json.dumps(config))
        for bits in (4, 8):
            convert(stored, out / family / f"mlx-{bits}bit", bits)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
