"""Helpers shared by core tests: explicit settings, constants, raw safetensors bytes."""

from __future__ import annotations

import json
import struct
from typing import Any

from core.backend import Backend
from core.estimate.available import AvailableMemory
from core.estimate.estimate import EstimateSettings

LLAMA_4BIT = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
QWEN25_4BIT = "mlx-community/Qwen2.5-7B-Instruct-4bit"
QWEN3_MOE_4BIT = "mlx-community/Qwen3-30B-A3B-4bit"
GFX1151_LIMIT = 82_463_372_083  # MLX's 76.80 GiB limit on gfx1151 (80% of 96 GiB VRAM)

MINIMAL_CONFIG: dict[str, Any] = {
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "vocab_size": 32000,
    "intermediate_size": 11008,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
}


def settings(
    backend: Backend = Backend.ROCM,
    available: int = GFX1151_LIMIT,
    inflight_mib: int = 1024,
    factor: float = 1.20,
    mult: float = 2.0,
) -> EstimateSettings:
    """Explicit estimate settings (no environment, no probes)."""
    return EstimateSettings(
        backend=backend,
        available=AvailableMemory(available, "test"),
        headroom_factor=factor,
        activation_mult=mult,
        inflight_mib=inflight_mib,
    )


def safetensors_bytes(header: Any, data_len: int = 0, raw_header: bytes | None = None) -> bytes:
    """A safetensors file: 8-byte length, header JSON, `data_len` zero bytes."""
    body = raw_header if raw_header is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(body)) + body + b"\0" * data_len


def split_banner(out: str) -> tuple[str, list[str]]:
    """`inspect`'s stdout as mlxcel's banner (and note) and vramscope's lines after it,
    each of which says it is vramscope's."""
    lines = out.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line.startswith("vramscope")), len(lines))
    ours = [line.rstrip("\n") for line in lines[first:]]
    assert all(line.startswith("vramscope") for line in ours), ours
    return "".join(lines[:first]), ours
