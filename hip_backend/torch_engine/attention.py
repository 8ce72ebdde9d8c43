"""Attention as MLX computes it on the measured backend, so its transients match.

`mx.fast.scaled_dot_product_attention` has fused kernels on Metal and CUDA, but on
the CPU, and on ROCm in upstream MLX (`ScaledDotProductAttention::use_fallback`
returns true there: "until MIOpen integration is complete"), it runs its unfused
fallback (mlx/fast.cpp), which materialises the scores:

    q = q * scale                       [B, H, L, D]
    scores = q @ k.T                    [B, Hkv, H/Hkv, L, S] in the model's dtype
    scores = where(mask, scores, min)   (causal chunks; donates the scores' buffer)
    scores = softmax(scores, precise)   (float32 inside, donates the buffer)
    out = scores @ v                    [B, H, L, D]

so a prefill chunk of L tokens holds one `H x L x S` score matrix per layer while
it runs, which torch's fused SDPA never allocates (8 MiB at H = 16, L = S = 512 in
BF16). `mlx_fallback_attention` runs the same ops with the same live buffers (the
two donated steps in place); `fused_attention` is torch's SDPA, for backends where
MLX has a fused kernel. `attention_kind` picks one per device kind.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from core.backend import Backend

if TYPE_CHECKING:
    import torch

    from hip_backend.torch_engine.inflight import InflightQueue

MLX_FALLBACK = "mlx-fallback"
"""MLX's unfused attention (scores materialised): CPU and ROCm."""
FUSED = "torch-sdpa"
"""torch's scaled_dot_product_attention (fused where torch has a kernel): CUDA, where
MLX uses cuDNN SDPA for prefill and its vector kernel for decode."""

ATTENTION_NOTES = {
    MLX_FALLBACK: "MLX's unfused fallback (an H x L x S score matrix per layer while a "
    "prefill chunk runs), as MLX runs it on the CPU and ROCm",
    FUSED: "torch's fused SDPA (no score matrix), as MLX's CUDA kernels",
}


def attention_kind(device_kind: Backend) -> str:
    """The attention MLX runs on a backend (the CPU, ROCm, CUDA)."""
    return FUSED if device_kind is Backend.CUDA else MLX_FALLBACK


def mlx_fallback_attention(
    q: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    queue: InflightQueue,
) -> torch.Tensor:
    """`softmax(q k^T * scale + mask) v` op by op as MLX's fallback; `[B, H, L, D]`.

    `mask` is a boolean `[L, S]` (True where a query sees a key), or None when every
    key is visible (a decode step)."""
    import torch

    batch, heads, length, dim = q.shape
    kv_heads = keys.shape[1]
    repeats = heads // kv_heads
    scaled = q * scale
    queue.op(scaled)
    grouped = scaled.view(batch, kv_heads, repeats, length, dim)
    with without_onednn(length == 1 and q.device.type == "cpu"):
        scores = torch.matmul(grouped, keys[:, :, None].transpose(-1, -2))
        queue.op(scores)
        del scaled, grouped  # MLX frees q * scale once the scores exist
        if mask is not None:
            scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
        # Softmax written over its input, as MLX donates the buffer (the CPU kernel
        # works row by row in float32; tests/hip_backend/torch_engine/test_attention.py checks the
        # aliasing gives torch.softmax's result).
        torch.ops.aten._softmax.out(scores, -1, False, out=scores)
        out = torch.matmul(scores, values[:, :, None])
    queue.op(out)
    return out.view(batch, heads, length, values.shape[-1])


@contextmanager
def without_onednn(active: bool) -> Iterator[None]:
    """torch's CPU 16-bit batched matmul goes through oneDNN, which caches a primitive,
    with its memory, for every new shape; each decode step has a new key length, so it
    grew the resident set by about 1 MiB a step (37 MB over 32 steps, measured), memory
    MLX never has. For a decode step's [1 x S] rows the native kernel is as fast or
    faster (0.4 against 4.2 ms a step at S = 160); prefill chunks (few shapes, large
    GEMMs) keep oneDNN."""
    import torch

    if not active or not torch.backends.mkldnn.enabled:
        yield
        return
    torch.backends.mkldnn.enabled = False  # type: ignore[assignment]  # a ContextProp
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = True  # type: ignore[assignment]


def fused_attention(
    q: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    queue: InflightQueue,
) -> torch.Tensor:
    """torch's SDPA (flash or memory-efficient kernels where the build has them)."""
    import torch.nn.functional as F

    length, total = q.shape[2], keys.shape[2]
    causal = mask is not None and length == total  # the first chunk: plain causal
    out = F.scaled_dot_product_attention(
        q,
        keys,
        values,
        attn_mask=None if causal else mask,
        is_causal=causal,
        scale=scale,
        enable_gqa=keys.shape[1] != q.shape[1],
    )
    queue.op(out)
    return out
