"""The models llama.cpp's memory goldens are made of (#40).

They are tests/gguf_models.py's synthesized models (the keys and tensors the vendored
llama.cpp asks for, zeroed data that llama.cpp loads and generates a token from), at sizes
where every term of the load counts: a vocabulary of 8,192 (so that the logits count),
grouped-query heads of 32, 64 and 128, quantized matrices (q8_0, q4_0) beside f16 ones,
tied and untied outputs, windows of 128 and 192 (so that `n_swa + n_ubatch` is below the
context). The same function writes the file llama.cpp measured (scripts/llama_golden.py)
and the one the tests read, and they are read back through vramscope's own GGUF reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.gguf.local import read_gguf_model
from core.gguf.record import GgufModel
from tests.gguf_models import gguf_layout, write_gguf

_COMMON: dict[str, Any] = {"n_vocab": 8192, "n_ctx_train": 8192, "n_embd": 256, "n_ff": 512}

MODELS: dict[str, dict[str, Any]] = {
    "llama": {"weight_type": "Q8_0", "n_head": 8, "head_dim": 32, "n_ff": 640},
    "qwen2": {"weight_type": "Q4_0", "n_head": 4, "head_dim": 64},
    "qwen3": {"weight_type": "F16", "n_head": 4, "head_dim": 128},
    "qwen3moe": {"weight_type": "F16", "n_layer": 3, "head_dim": 64, "n_ff_exp": 128},
    "gemma2": {"weight_type": "F16", "head_dim": 64, "n_swa": 128},
    "gemma3": {"weight_type": "Q8_0", "head_dim": 64, "n_head_kv": 1, "n_swa": 192},
    "phi3": {"weight_type": "F16", "n_head": 8, "n_head_kv": 8},
    "deepseek2": {"weight_type": "F16"},
    "lfm2": {"weight_type": "F16", "head_dim": 64},
}
"""Per architecture (llama.cpp's `general.architecture`): `gguf_layout`'s overrides."""


def write_model(folder: Path, arch: str) -> Path:
    """Write the golden `arch` model into `folder`; returns its path."""
    path = folder / f"golden-{arch}.gguf"
    write_gguf(path, gguf_layout(arch, **{**_COMMON, **MODELS[arch]}))
    return path


def read_model(path: Path) -> GgufModel:
    """The model as vramscope reads it (`core.gguf`)."""
    return read_gguf_model(path)


def write_quant(folder: Path, arch: str, weight_type: str) -> Path:
    """The golden `arch` model with its matrices in `weight_type` (F16, Q8_0, Q4_0), as a
    repo's quant file `<arch>-<weight_type>.gguf`: two of them are one model's quants."""
    path = folder / f"{arch}-{weight_type}.gguf"
    dims = {**_COMMON, **MODELS[arch], "weight_type": weight_type}
    write_gguf(path, gguf_layout(arch, **dims))
    return path
