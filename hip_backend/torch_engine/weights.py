"""Resident weights of one module, and their float form for a GEMM.

A quantized module keeps its packed words, scales and biases on the device (the
bytes the estimate's weights term counts). Applied to many rows (a prefill
chunk), it is dequantized into a fresh 16-bit copy that feeds the GEMM and is
then a transient, as in MLX's ROCm dequantize-and-GEMM path. Applied to a few
rows (a decode step, the last position's logits, an expert's handful of tokens)
MLX uses its quantized matrix-vector kernels, which make no full-size copy; the
engine runs them straight from the packed words instead: on the CPU, 4-bit
modules through torch's own int4 kernel (`int4_cpu.py`, the words rewritten in
place into its layout at load), anything else through `quant.quantized_matmul`.
A float module is used as stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hip_backend.torch_engine import int4_cpu
from hip_backend.torch_engine.attention import without_onednn
from hip_backend.torch_engine.inflight import InflightQueue
from hip_backend.torch_engine.int4_cpu import Int4Weight
from hip_backend.torch_engine.quant import (
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

NARROW_ROWS_PER_OUTPUT = 4
"""MLX's CPU `quantized_matmul` allocates only its output. `quant.quantized_matmul`
holds float32 copies of its input (the input and its shifted coefficients, about
8 x rows x in bytes); a dequantized 16-bit weight is 2 x out x in bytes. Past `out / 4`
rows the copy is the smaller, and a module on the CPU takes it, freed as soon as the
GEMM has run: a 4-bit MoE router (32 outputs over 512 inputs, too few outputs for
torch's int4 kernel; an 8-bit router never goes there) held about 2.6 MB of input copies
at a 511-token chunk, against a 32 KB weight copy (`scripts/bench_measure.py --only
buffers`). Its GEMM runs without oneDNN, which keeps a compiled kernel (about 0.7 MB
resident) for every new row count; MLX has none (measured: 31.8 against 30.9 MB at
pp128, top-4, where MLX holds 30.0)."""

FEW_ROWS_KERNELS = ("fused", "sliced")
few_rows_kernel = "fused"
"""How a quantized linear in MLX's layout runs on few rows: `fused`
(`quant.quantized_matmul`, no 16-bit weight at all, as MLX's qmv) or `sliced` (the
earlier path: dequantize a bounded slice of rows at a time, then a 16-bit GEMM; about 5x
slower on the CPU). Kept for scripts/bench_measure.py's before/after comparison."""
cpu_int4 = True
"""Convert 4-bit CPU modules to torch's int4 kernel at load (`int4_cpu.py`); off keeps
every module in MLX's layout (scripts/bench_measure.py's before/after comparison)."""


@contextmanager
def kernel_choice(*, few_rows: str = "fused", int4: bool = True) -> Iterator[None]:
    """Build and run models with these kernels inside the block (`few_rows_kernel`,
    `cpu_int4`; scripts/bench_measure.py's before/after comparison); the ones in force
    before come back on exit."""
    global few_rows_kernel, cpu_int4
    if few_rows not in FEW_ROWS_KERNELS:
        raise ValueError(f"few_rows must be one of {', '.join(FEW_ROWS_KERNELS)}")
    saved = few_rows_kernel, cpu_int4
    few_rows_kernel, cpu_int4 = few_rows, int4
    try:
        yield
    finally:
        few_rows_kernel, cpu_int4 = saved


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
    int4: Int4Weight | None = None
    """The same packed weights in torch's CPU int4 layout (`for_cpu_int4`); `weight` is
    then its packed bytes and `scales`/`biases` are None."""

    @property
    def quantized(self) -> bool:
        """True when the weight is packed (MLX's layout or torch's CPU int4 one)."""
        return self.scales is not None or self.int4 is not None

    @property
    def scales_dtype(self) -> torch.dtype | None:
        """The dtype of the quantization scales (None for a float module)."""
        if self.int4 is not None:
            return self.int4.dtype
        return None if self.scales is None else self.scales.dtype

    def for_cpu_int4(self) -> Linear:
        """This module with its 4-bit words rewritten in place into torch's CPU int4
        layout, when `int4_cpu` can run it; otherwise itself unchanged."""
        if (
            not cpu_int4
            or self.scales is None
            or self.biases is None
            or not int4_cpu.convertible(self.weight, self.scales, self.bits, self.group_size)
        ):
            return self
        int4 = int4_cpu.from_mlx(self.weight, self.scales, self.biases, self.group_size)
        return Linear(
            int4.packed, None, None, self.bias, self.bits, self.group_size, self.no_copy, int4
        )

    def dense(self, queue: InflightQueue) -> torch.Tensor:
        """The float weight: the stored tensor, or a dequantized copy (one op)."""
        if self.int4 is not None:
            out = self.int4.dequantize()
        elif self.scales is None or self.biases is None:
            return self.weight
        else:
            out = dequantize(self.weight, self.scales, self.biases, self.bits, self.group_size)
        queue.op(out)
        return out

    def dense_rows(self, rows: torch.Tensor, queue: InflightQueue) -> torch.Tensor:
        """Selected rows in float (an embedding lookup), one op."""
        if self.int4 is not None:
            out = self.int4.dequantize_rows(rows)
        elif self.scales is None or self.biases is None:
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
            few_rows_fused = few_rows_kernel == "fused" or self.int4 is not None
            y = self._fused(x) if few_rows_fused else self._few_rows(x)
        else:
            y = F.linear(x, self.dense(queue), self.bias)
        queue.op(y)
        return y

    def gathered(self, x: torch.Tensor) -> torch.Tensor:
        """`x @ W.T + b` as one expert's slice of MLX's `gather_qmm`/`gather_mm`: from the
        packed words (no dequantized copy), nothing handed to the queue (the whole
        gather is one op, accounted by its caller)."""
        import torch.nn.functional as F

        return self._fused(x) if self.quantized else F.linear(x, self.weight, self.bias)

    def _fused(self, x: torch.Tensor) -> torch.Tensor:
        """`x @ W.T + b` straight from the packed words (no weight copy), or, for a
        narrow module on the CPU, through the smaller transient of the two
        (`NARROW_ROWS_PER_OUTPUT`)."""
        import torch.nn.functional as F

        if self.int4 is not None:
            y = self.int4.matmul(x)
        else:
            assert self.scales is not None
            assert self.biases is not None
            rows = x.numel() // max(1, x.shape[-1])
            if x.device.type == "cpu" and NARROW_ROWS_PER_OUTPUT * rows > self.weight.shape[-2]:
                weight = dequantize(
                    self.weight, self.scales, self.biases, self.bits, self.group_size
                )
                with without_onednn(True):
                    return F.linear(x, weight, self.bias)
            y = quantized_matmul(
                x, self.weight, self.scales, self.biases, self.bits, self.group_size
            )
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
        if self.int4 is not None:
            int4 = self.int4.expert(index)
            return Linear(int4.packed, None, None, None, self.bits, self.group_size, True, int4)
        return Linear(
            self.weight[index],
            None if self.scales is None else self.scales[index],
            None if self.biases is None else self.biases[index],
            None,
            self.bits,
            self.group_size,
            no_copy=True,
        )
