"""The two tiny 4-bit qwen3_moe models of #38's torch-against-MLX grid, shared by the
grid (`scripts/bench_measure.py --only moe-sweep`) and the tests that hold its shapes to
the band (`tests/hip_backend/test_torch_against_mlx.py`). Small enough that MLX's CPU
4-bit `gather_qmm` runs the whole grid in minutes here (about 0.13 G multiply-adds a
second on a shared 2-core CPU); two expert shapes. Each top-k is a variant with its own
`num_experts_per_tok` over the same weights."""

from __future__ import annotations

from typing import Any

_BASE: dict[str, Any] = {
    "model_type": "qwen3_moe",
    "hidden_size": 512,
    "num_hidden_layers": 4,
    "intermediate_size": 2048,
    "moe_intermediate_size": 128,
    "num_experts_per_tok": 4,  # each top-k's variant sets its own
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "norm_topk_prob": True,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "rms_norm_eps": 1e-6,
    "vocab_size": 16384,
    "rope_theta": 1000000.0,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization": {"group_size": 64, "bits": 4},
}

MOE_A: dict[str, Any] = {**_BASE, "num_experts": 32}
"""A: hidden 512, 32 experts of 128 (25.1 MB of weights)."""
MOE_B: dict[str, Any] = {**_BASE, "hidden_size": 256, "intermediate_size": 1024, "num_experts": 64}
"""B: hidden 256, 64 experts of 128 (19.7 MB): the grid's smallest weights, where memory
of the torch process that no tensor holds weighs most."""

MOE_SWEEP_MODELS: dict[str, dict[str, Any]] = {
    "4-bit qwen3_moe 512x4, 32 experts of 128": MOE_A,
    "4-bit qwen3_moe 256x4, 64 experts of 128": MOE_B,
}
"""The grid's models by the name its tables give them."""
