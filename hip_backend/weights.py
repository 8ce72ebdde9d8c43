"""Resident weights of one module, and their float form for a GEMM.

A quantized module keeps its packed words, scales and biases on the device (the
bytes the estimate's weights term counts). Applied to many rows (a prefill
chunk), it is dequantized into a fresh 16-bit copy that feeds the GEMM and is
then a transient, as in MLX's ROCm dequantize-and-GEMM path. Applied to a few
rows (a decode step, the last position's logits, an expert's handful of tokens)
MLX uses its quantized matrix-vector kernels, which make no full-size copy; the
engine then dequantizes a bounded slice of rows at a time instead. A float
module is used as stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hip_backend.inflight import InflightQueue
from hip_backend.quant import (
    CHUNK_ELEMENTS,
    GPU_CHUNK_ELEMENTS,
    dequantize,
    quantized_matmul,
)

if TYPE_CHECKING:
    import torch

QMV_MAX_ROWS = 8
"""Up to this many input rows a quantized linear makes no full-size copy. MLX picks its
matrix-vector kernels below a small batch limit (4 to 18 rows depending on the device)."""

FEW_ROWS_KERNELS = ("fused", "sliced")
few_rows_kernel = "fused"
"""How a quantized linear runs on few rows: `fused` (`quant.quantized_matmul`, no 16-bit
weight at all, as MLX's qmv) or `sliced` (the earlier path: dequantize a bounded slice of
rows at a time, then a 16-bit GEMM; about 5x slower on the CPU). Kept for
scripts/bench_measure.py's before/after comparison."""


@dataclass
class Linear:
    """`y = x @ W.T + b`; W float `[out, in]`, or packed with scales and biases."""

    weight: torch.Tensor
    scales: torch.Tensor | None = None
    biases: torch.Tensor | None = None
    bias: torch.Tensor | None = None
    bits: int = 0
    group_size: int = 0
    no_copy: bool = False
    """Never make a dequantized copy, whatever the rows: a routed expert (MLX's
    `gather_qmm` runs the packed weights) or a module MLX-ROCm runs through its fused
    BF16-scale kernel (`fuse_bf16_scales`)."""

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

        rows = x.numel() // max(1, x.shape[-1])
        if self.quantized and self.no_copy:
            y = self._fused(x)
        elif self.quantized and rows <= QMV_MAX_ROWS:
            y = self._fused(x) if few_rows_kernel == "fused" else self._few_rows(x)
        else:
            y = F.linear(x, self.dense(queue), self.bias)
        queue.op(y)
        return y

    def _fused(self, x: torch.Tensor) -> torch.Tensor:
        """`x @ W.T + b` straight from the packed words (no weight copy)."""
        assert self.scales is not None
        assert self.biases is not None
        y = quantized_matmul(x, self.weight, self.scales, self.biases, self.bits, self.group_size)
        return y if self.bias is None else y + self.bias

    def _few_rows(self, x: torch.Tensor) -> torch.Tensor:
        """`x @ W.T + b` dequantizing a slice of W's rows at a time (no full copy)."""
        import torch
        import torch.nn.functional as F

        assert self.scales is not None
        assert self.biases is not None
        out_features = self.weight.shape[0]
        in_features = x.shape[-1]
        flat = x.reshape(-1, in_features)
        y = torch.empty((flat.shape[0], out_features), dtype=flat.dtype, device=flat.device)
        per_step = CHUNK_ELEMENTS if x.device.type == "cpu" else GPU_CHUNK_ELEMENTS
        step = max(1, per_step // max(1, in_features))
        for r0 in range(0, out_features, step):
            r1 = min(out_features, r0 + step)
            w = dequantize(
                self.weight[r0:r1],
                self.scales[r0:r1],
                self.biases[r0:r1],
                self.bits,
                self.group_size,
            )
            bias = None if self.bias is None else self.bias[r0:r1]
            y[:, r0:r1] = F.linear(flat, w, bias)
        return y.view(*x.shape[:-1], out_features)

    def expert(self, index: int) -> Linear:
        """Expert `index` of a stacked `[E, out, in]` module, as a Linear view that runs
        from its packed words (no dequantized copy, as MLX's `gather_qmm`)."""
        return Linear(
            self.weight[index],
            None if self.scales is None else self.scales[index],
            None if self.biases is None else self.biases[index],
            None,
            self.bits,
            self.group_size,
            no_copy=True,
        )
