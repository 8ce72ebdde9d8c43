"""Tiny models written by mlx and mlx-lm, as mlx-community conversions are.

`write_mlx_model` builds an mlx-lm model from a config, casts it to the dtype
the conversion would use, quantizes it with `mlx_lm.utils.quantize_model`
(per-layer overrides included: qwen3_moe's 8-bit router) and saves it with
`save_model` / `save_config`: the same files `mlx_lm.convert` writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def import_mlx_lm() -> None:
    """mlx and mlx-lm, imported as the engine's child imports them (torch hidden while
    mlx-lm's transformers loads, `hip_backend.mlx_engine.loader`). With torch visible,
    transformers imported it too: writing the tiny Llama took 2.3-2.6 s of a fresh
    worker's processor time, against 1.2-1.5 s."""
    from hip_backend.mlx_engine.loader import import_mlx

    import_mlx()


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
    mode: str = "affine",
) -> Path:
    """Write a random mlx-lm model (quantized unless `bits` is None, in `mode`: affine,
    mxfp4, nvfp4, ...) to `dest`."""
    import_mlx_lm()
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
        model, out_config = quantize_model(model, out_config, group_size, bits, mode=mode)
    mx.eval(model.parameters())
    save_model(dest, model)
    save_config(out_config, config_path=dest / "config.json")
    return dest


SWEEP_CONFIG: dict[str, Any] = {
    # Wide MLPs over many layers: a prefill's f16/bf16 weight copies add up to 668 MiB,
    # far above the largest budget of the sweep, while each copy is 4 MiB.
    "model_type": "llama",
    "hidden_size": 512,
    "num_hidden_layers": 48,
    "intermediate_size": 4096,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-5,
    "vocab_size": 1024,
    "rope_theta": 10000.0,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}


def write_random_quantized_model(
    dest: Path, config: dict[str, Any], *, bits: int = 4, group_size: int = 64, seed: int = 0
) -> Path:
    """An MLX affine-quantized model with random packed weights, written by mlx.

    Tensor names and shapes come from mlx-lm's own model class (its modules are
    created lazily, so nothing is initialised); values are random words with
    scales and biases of a freshly initialised layer. Much faster than quantizing
    a random float model when the model has hundreds of millions of weights.
    """
    import_mlx_lm()
    import json
    import math

    import mlx.core as mx
    import numpy as np
    from mlx.nn.layers.embedding import Embedding
    from mlx.nn.layers.linear import Linear
    from mlx.nn.layers.normalization import RMSNorm
    from mlx_lm.utils import _get_classes

    rng = np.random.default_rng(seed)
    model_class, args_class = _get_classes(config=config)
    model = model_class(args_class.from_dict(config))
    dtype = {"float16": mx.float16, "bfloat16": mx.bfloat16}[config["torch_dtype"]]
    tensors: dict[str, Any] = {}
    for path, module in model.named_modules():
        if isinstance(module, Linear | Embedding):
            out_f, in_f = module.weight.shape
            bound = 1.0 / math.sqrt(in_f)
            words = rng.integers(0, 2**32, size=(out_f, in_f * bits // 32), dtype=np.uint32)
            tensors[f"{path}.weight"] = mx.array(words)
            groups = (out_f, in_f // group_size)
            tensors[f"{path}.scales"] = mx.full(groups, 2 * bound / (2**bits - 1), dtype=dtype)
            tensors[f"{path}.biases"] = mx.full(groups, -bound, dtype=dtype)
            if "bias" in module:
                tensors[f"{path}.bias"] = mx.zeros((out_f,), dtype=dtype)
        elif isinstance(module, RMSNorm):
            tensors[f"{path}.weight"] = mx.ones(module.weight.shape, dtype=dtype)
    dest.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(dest / "model.safetensors"), tensors, metadata={"format": "mlx"})
    out_config = dict(config, quantization={"group_size": group_size, "bits": bits})
    (dest / "config.json").write_text(json.dumps(out_config, indent=4, sort_keys=True))
    return dest


class Reference:
    """mlx-lm's greedy run of a model: per-step last-position logits and the tokens."""

    def __init__(self, logits: list[Any], tokens: list[int], route_gap: float) -> None:
        self.logits = logits
        self.tokens = tokens
        self.route_gap = route_gap
        """Smallest gap between the k-th and (k+1)-th router logit over every token."""

    @property
    def min_margin(self) -> float:
        """Smallest gap between the top two logits over the greedy steps."""
        import numpy as np

        return float(min(np.diff(np.sort(row)[-2:])[0] for row in self.logits))


def mlx_lm_reference(
    path: Path, prompt: list[int], steps: int, *, dequantized_f32: bool = False
) -> Reference:
    """Run mlx-lm on the model as written (or dequantized to float32) greedily."""
    import_mlx_lm()
    import math

    import mlx.core as mx
    import numpy as np
    from mlx.nn.layers.base import Module
    from mlx.utils import tree_map
    from mlx_lm.models.cache import make_prompt_cache
    from mlx_lm.utils import dequantize_model, load_model

    model, config = load_model(path)
    if dequantized_f32:
        model = dequantize_model(model)
        model.update(tree_map(lambda p: p.astype(mx.float32), model.parameters()))
    gate_logits: list[Any] = []

    class RecordingGate(Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.inner = inner

        def __call__(self, x: Any) -> Any:
            out = self.inner(x)
            gate_logits.append(np.array(out.astype(mx.float32)).reshape(-1, out.shape[-1]))
            return out

    for layer in model.layers:
        if hasattr(layer.mlp, "gate") and hasattr(layer.mlp, "switch_mlp"):
            layer.mlp.gate = RecordingGate(layer.mlp.gate)
    cache = make_prompt_cache(model)
    logits = []
    out = model(mx.array([prompt]), cache=cache)
    for _ in range(steps):
        row = np.array(out[0, -1].astype(mx.float32))
        logits.append(row)
        out = model(mx.array([[int(row.argmax())]]), cache=cache)
    tokens = [int(row.argmax()) for row in logits]
    k = config.get("num_experts_per_tok", 0)
    gap = math.inf
    for rows in gate_logits:
        ordered = np.sort(rows, axis=-1)
        gap = min(gap, float((ordered[:, -k] - ordered[:, -k - 1]).min()))
    return Reference(logits, tokens, gap)


GEMMA2_CONFIG: dict[str, Any] = {
    "model_type": "gemma2",
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "intermediate_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "rms_norm_eps": 1e-6,
    "vocab_size": 512,
    "rope_theta": 10000.0,
    "attn_logit_softcapping": 50.0,
    "final_logit_softcapping": 30.0,
    "query_pre_attn_scalar": 32,
    "sliding_window": 4096,
    "max_position_embeddings": 8192,
    "torch_dtype": "float16",
}

DEEPSEEK_V2_CONFIG: dict[str, Any] = {
    # Multi-head latent attention (compressed KV) and routed plus shared experts, as
    # DeepSeek-V2-Lite (no q compression, first layer dense).
    "model_type": "deepseek_v2",
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "intermediate_size": 256,
    "moe_intermediate_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_shared_experts": 1,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "routed_scaling_factor": 1.0,
    "kv_lora_rank": 64,
    "q_lora_rank": None,
    "qk_rope_head_dim": 16,
    "v_head_dim": 32,
    "qk_nope_head_dim": 32,
    "topk_method": "greedy",
    "moe_layer_freq": 1,
    "first_k_dense_replace": 1,
    "rms_norm_eps": 1e-6,
    "vocab_size": 512,
    "rope_theta": 10000.0,
    "rope_scaling": {
        "type": "yarn",
        "factor": 40,
        "original_max_position_embeddings": 4096,
        "beta_fast": 32,
        "beta_slow": 1,
        "mscale": 0.707,
        "mscale_all_dim": 0.707,
    },
    "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}

QWEN3_NEXT_CONFIG: dict[str, Any] = {
    # Hybrid: three gated-delta (linear attention, recurrent state) layers per full
    # attention layer, routed experts with a shared expert, as Qwen3-Next.
    "model_type": "qwen3_next",
    "hidden_size": 128,
    "num_hidden_layers": 4,
    "intermediate_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "linear_num_value_heads": 4,
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 32,
    "linear_value_head_dim": 32,
    "linear_conv_kernel_dim": 4,
    "full_attention_interval": 4,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "decoder_sparse_step": 1,
    "shared_expert_intermediate_size": 128,
    "mlp_only_layers": [],
    "moe_intermediate_size": 64,
    "norm_topk_prob": True,
    "rms_norm_eps": 1e-6,
    "vocab_size": 512,
    "rope_theta": 10000.0,
    "partial_rotary_factor": 0.25,
    "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16",
}
