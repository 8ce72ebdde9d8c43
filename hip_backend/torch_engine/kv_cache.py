"""mlx-lm's `KVCache`: 16-bit K/V buffers grown in 256-token steps.

When a write does not fit, a zero block of `ceil(L / 256) * 256` positions is
appended (the old buffer trimmed to its used length first when that is not a
step multiple), and the old and new buffers are both alive while the copy runs,
exactly as mlx-lm's concatenate does. The estimate's KV term rounds the context
up to the same 256-token step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hip_backend.torch_engine.inflight import InflightQueue

if TYPE_CHECKING:
    import torch

KV_STEP = 256


class KVCache:
    """One layer's keys and values, `[B, kv_heads, capacity, head_dim]`."""

    def __init__(self, queue: InflightQueue) -> None:
        self.queue = queue
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None
        self.offset = 0

    @property
    def capacity(self) -> int:
        """Allocated positions."""
        return 0 if self.keys is None else int(self.keys.shape[2])

    @property
    def nbytes(self) -> int:
        """Bytes held by the K and V buffers."""
        if self.keys is None or self.values is None:
            return 0
        return int(self.keys.nbytes + self.values.nbytes)

    def _grow(self, new_k: torch.Tensor, new_v: torch.Tensor) -> None:
        import torch

        batch, heads, length, k_dim = new_k.shape
        block = (KV_STEP + length - 1) // KV_STEP * KV_STEP
        zeros_k = torch.zeros((batch, heads, block, k_dim), dtype=new_k.dtype, device=new_k.device)
        zeros_v = torch.zeros(
            (batch, heads, block, new_v.shape[3]), dtype=new_v.dtype, device=new_v.device
        )
        self.queue.op(zeros_k, zeros_v)
        if self.keys is None or self.values is None:
            self.keys, self.values = zeros_k, zeros_v
            return
        used_k, used_v = self.keys, self.values
        if self.offset % KV_STEP:
            used_k, used_v = used_k[..., : self.offset, :], used_v[..., : self.offset, :]
        self.keys = torch.cat((used_k, zeros_k), dim=2)
        self.values = torch.cat((used_v, zeros_v), dim=2)
        self.queue.op(self.keys, self.values)

    def update(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append `[B, kv_heads, L, head_dim]` K/V; return the filled part of the cache."""
        length = keys.shape[2]
        if self.keys is None or self.offset + length > self.capacity:
            self._grow(keys, values)
        assert self.keys is not None
        assert self.values is not None
        start, self.offset = self.offset, self.offset + length
        self.keys[..., start : self.offset, :] = keys
        self.values[..., start : self.offset, :] = values
        self.queue.op()
        return self.keys[..., : self.offset, :], self.values[..., : self.offset, :]
