"""Rotary position embeddings as mlx-lm applies them (non-traditional, rotate-half).

Frequencies follow mlx-lm's `nn.RoPE` (default, and `linear` as a position
scale) and `Llama3RoPE` (low-frequency stretch with a smooth middle band). The
rotation is computed in float32 and rounded to the activation dtype once, as
`mx.fast.rope` does.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hip_backend.model.arch import RopeKind, RopeSpec

if TYPE_CHECKING:
    import torch


def rope_periods(spec: RopeSpec, dims: int) -> list[float]:
    """Per-pair periods `base ** (2i / dims)`, Llama 3 scaled when configured."""
    periods = [spec.theta ** (i / dims) for i in range(0, dims, 2)]
    if spec.kind is not RopeKind.LLAMA3:
        return periods
    factor, low, high = spec.factor, spec.low_freq_factor, spec.high_freq_factor
    old = spec.original_max_position_embeddings
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for period in periods:
        wavelen = 2 * math.pi * period
        scaled = period * factor if wavelen > low_wavelen else period
        if high_wavelen < wavelen < low_wavelen:
            smooth = (old / wavelen - low) / (high - low)
            scaled = scaled / ((1 - smooth) / factor + smooth)
        out.append(scaled)
    return out


class Rope:
    """Precomputed inverse frequencies on the model's device."""

    def __init__(self, spec: RopeSpec, dims: int, device: torch.device) -> None:
        import torch

        self.dims = dims
        self.position_scale = 1.0 / spec.factor if spec.kind is RopeKind.LINEAR else 1.0
        periods = torch.tensor(rope_periods(spec, dims), dtype=torch.float32)
        self.inv_freq = (1.0 / periods).to(device)

    def __call__(self, x: torch.Tensor, offset: int) -> torch.Tensor:
        """Rotate `x` ([B, heads, L, head_dim]) for positions offset .. offset + L - 1."""
        import torch

        length = x.shape[-2]
        positions = torch.arange(offset, offset + length, device=x.device, dtype=torch.float32)
        angles = (positions * self.position_scale)[:, None] * self.inv_freq[None, :]
        cos, sin = angles.cos(), angles.sin()
        half = self.dims // 2
        xf = x.float()
        x1, x2 = xf[..., :half], xf[..., half : self.dims]
        rotated = torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
        if self.dims < x.shape[-1]:
            rotated = torch.cat((rotated, xf[..., self.dims :]), dim=-1)
        return rotated.to(x.dtype)
