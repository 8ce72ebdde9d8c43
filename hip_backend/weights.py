"""Resident weights of one module, and their float form for a GEMM.

A quantized module keeps its packed words, scales and biases on the device (the
bytes the estimate's weights term counts) and is dequantized on every use into
a fresh 16-bit copy that feeds the GEMM and is then a transient, as in MLX's
ROCm dequantize-and-GEMM path. A float module is used as stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hip_backend.inflight import InflightQueue
from hip_backend.quant import dequantize

if TYPE_CHECKING:
    import torch


@dataclass
class Linear:
    """`y = x @ W.T + b`; W float `[out, in]`, or packed with scales and biases."""

    weight: torch.Tensor
    scales: torch.Tensor | None = None
    biases: torch.Tensor | None = None
    bias: torch.Tensor | None = None
    bits: int = 0
    group_size: int = 0

    @property
    def quantized(self) -> bool:
        """True when the weight is MLX affine packed."""
        return self.scales is not None

    def dense(self, queue: InflightQueue) -> torch.Tensor:
        """The float weight: the stored tensor, or a dequantized copy (one op)."""
        if self.scales is None or self.biases is None:
            return self.weight
        out = dequantize(self.weight, self.scales, self.biases, self.bits, self.group_size)
        queue.op(out)
        return out

    def dense_rows(self, rows: torch.Tensor, queue: InflightQueue) -> torch.Tensor:
        """Selected rows in float (an embedding lookup), one op."""
        if self.scales is None or self.biases is None:
            out = self.weight[rows]
        else:
            out = dequantize(
                self.weight[rows], self.scales[rows], self.biases[rows], self.bits, self.group_size
            )
        queue.op(out)
        return out

    def __call__(self, x: torch.Tensor, queue: InflightQueue) -> torch.Tensor:
        """Apply to `x` (`[..., in]`): dequantize (if packed), GEMM, bias."""
        import torch.nn.functional as F

        y = F.linear(x, self.dense(queue), self.bias)
        queue.op(y)
        return y

    def expert(self, index: int) -> Linear:
        """Expert `index` of a stacked `[E, out, in]` module, as a plain Linear view."""
        return Linear(
            self.weight[index],
            None if self.scales is None else self.scales[index],
            None if self.biases is None else self.biases[index],
            None,
            self.bits,
            self.group_size,
        )
