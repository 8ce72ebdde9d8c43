"""Sixty small repos for `fit --hub` tests: a llama config and one header each, built in
memory (no folder), their data regions zeros the server never stores."""

from __future__ import annotations

import json
import struct

from tests.hub_server import FakeHub, SparseFile
from tests.model_writers import encode_header

AUTHOR = "fit-org"


def repo_files(i: int) -> dict[str, SparseFile]:
    """Repo `i`: hidden size and layers grow with `i`; BF16 (even) or F16 (odd)."""
    hidden = 1024 + 128 * (i % 16)
    layers = 2 + i % 5
    vocab = 32000
    inter = hidden * 3
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_hidden_layers": layers,
        "num_attention_heads": hidden // 128,
        "num_key_value_heads": max(1, hidden // 512),
        "vocab_size": vocab,
        "max_position_embeddings": 4096 * (1 + i % 4),
        "rms_norm_eps": 1e-5,
        "torch_dtype": "bfloat16",
    }
    dtype = "BF16" if i % 2 == 0 else "F16"
    kv = config["num_key_value_heads"] * 128
    tensors = [("model.embed_tokens.weight", dtype, (vocab, hidden))]
    for n in range(layers):
        p = f"model.layers.{n}."
        tensors += [
            (p + "self_attn.q_proj.weight", dtype, (hidden, hidden)),
            (p + "self_attn.k_proj.weight", dtype, (kv, hidden)),
            (p + "self_attn.v_proj.weight", dtype, (kv, hidden)),
            (p + "self_attn.o_proj.weight", dtype, (hidden, hidden)),
            (p + "mlp.gate_proj.weight", dtype, (inter, hidden)),
            (p + "mlp.up_proj.weight", dtype, (inter, hidden)),
            (p + "mlp.down_proj.weight", dtype, (hidden, inter)),
            (p + "input_layernorm.weight", dtype, (hidden,)),
            (p + "post_attention_layernorm.weight", dtype, (hidden,)),
        ]
    tensors += [("model.norm.weight", dtype, (hidden,)), ("lm_head.weight", dtype, (vocab, hidden))]
    header, data_bytes = encode_header(tensors, {"format": "pt"})
    head = struct.pack("<Q", len(header)) + header
    cfg = json.dumps(config, indent=2).encode()
    return {
        "config.json": SparseFile(cfg, len(cfg)),
        "model.safetensors": SparseFile(head, len(head) + data_bytes),
    }


def publish_sixty(hub: FakeHub, files: list[dict[str, SparseFile]]) -> list[str]:
    """Serve the repos as `fit-org/model-00`..`59`, with downloads, likes and dates."""
    names = []
    for i, f in enumerate(files):
        name = f"{AUTHOR}/model-{i:02d}"
        hub.add(name, f)
        hub.listing.meta[name] = {
            "downloads": 1000 + 37 * i,
            "likes": (i * 7) % 50,
            "lastModified": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T00:00:00.000Z",
        }
        names.append(name)
    return names
