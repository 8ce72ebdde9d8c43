"""MLX affine 4-bit weights in torch's CPU int4 layout, run by torch's own int4 kernel.

MLX's `qmv`/`qmm` kernels read packed 4-bit words and never build a 16-bit weight.
torch ships the CPU equivalent: `aten._weight_int4pack_mm_for_cpu` (AVX-512/AVX2,
float32 accumulation), which computes `x @ W.T` with `W = (q - 8) * scale + zero`
per group. MLX stores `W = q * scale + bias`, so `zero = bias + 8 * scale`: the same
weights, with the zero point rounded once to the scales' dtype (relative error at
most 2^-9 of the zero for BF16, 2^-11 for F16; MLX adds its bias in float32).

The conversion costs no memory: torch's CPU layout keeps each block of 64 rows in
the same bytes as MLX's words for those rows (`[N/64, K, 32]` bytes, rows `i` and
`i + 32` of a block sharing a byte), so the words are rewritten in place a chunk of
rows at a time; the scales and biases become one `[K/g, N, 2]` tensor of the same
size. That layout is torch's, not a public contract: `layout_supported()` checks it
on a probe once per process, and any module it does not fit (or another width,
group size or device) keeps the portable kernel in `quant.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

GROUP_SIZES = (32, 64, 128, 256)
"""The group sizes torch's CPU int4 kernel accepts (MLX's default is 64)."""
BLOCK_ROWS = 64
"""Rows per block of torch's CPU layout (checked by `layout_supported`)."""
CONVERT_ROWS = 4096
"""Rows converted (or dequantized) per step: the byte temporaries of one step (about 4x
the step's packed bytes, 8 MiB at 4096 columns) are all the conversion adds, whatever the
model's size."""


@dataclass(frozen=True)
class Int4Weight:
    """One quantized matrix `[N, K]` (or a stack `[E, N, K]`) in torch's CPU layout."""

    packed: torch.Tensor
    """uint8 `[..., N, K / 2]`: the MLX words' own storage, rewritten in place."""
    scale_zeros: torch.Tensor
    """`[..., K / g, N, 2]` in the compute dtype: scale and `bias + 8 * scale` per group."""
    group_size: int

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the scales (and of the activations the kernel takes)."""
        return self.scale_zeros.dtype

    @property
    def in_features(self) -> int:
        return int(self.packed.shape[-1]) * 2

    @property
    def out_features(self) -> int:
        return int(self.packed.shape[-2])

    def expert(self, index: int) -> Int4Weight:
        """Matrix `index` of a stack (views, no copy)."""
        return Int4Weight(self.packed[index], self.scale_zeros[index], self.group_size)

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        """`x @ W.T` for `x` of shape `[..., K]`: no weight copy at any row count."""
        import torch

        flat = x.reshape(-1, self.in_features)
        if flat.dtype != self.dtype:
            flat = flat.to(self.dtype)
        y: torch.Tensor = torch.ops.aten._weight_int4pack_mm_for_cpu(
            flat, self.packed, self.group_size, self.scale_zeros
        )
        return y.view(*x.shape[:-1], self.out_features)

    def dequantize(self) -> torch.Tensor:
        """The float weight `[N, K]` in the scales' dtype (the copy MLX-ROCm's
        dequantize-and-GEMM path makes for many rows)."""
        import torch

        n, k = self.out_features, self.in_features
        out = torch.empty((n, k), dtype=self.dtype)
        blocks_per_step = max(1, CONVERT_ROWS // BLOCK_ROWS)
        for b0 in range(0, n // BLOCK_ROWS, blocks_per_step):
            r0 = b0 * BLOCK_ROWS
            r1 = min(n, r0 + blocks_per_step * BLOCK_ROWS)
            _unpack_rows(self.packed[r0:r1], out[r0:r1])
            self._scale_rows(out[r0:r1], r0, r1)
        return out

    def dequantize_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """Selected rows (an embedding lookup) in float, `[*rows.shape, K]`."""
        import torch

        flat = rows.reshape(-1).long()
        k = self.in_features
        blocks = self.packed.view(-1, k, BLOCK_ROWS // 2)
        lane = flat % BLOCK_ROWS
        raw = blocks[flat // BLOCK_ROWS, :, lane % (BLOCK_ROWS // 2)]  # [R, K] bytes
        high = (lane >= BLOCK_ROWS // 2)[:, None]
        q = torch.where(high, raw >> 4, raw & 15).to(self.dtype)
        scales = self.scale_zeros[:, flat, 0].T  # [R, K/g]
        zeros = self.scale_zeros[:, flat, 1].T
        grouped = q.view(len(flat), -1, self.group_size)
        grouped.sub_(8).mul_(scales[..., None]).add_(zeros[..., None])
        return q.view(*rows.shape, k)

    def _scale_rows(self, out: torch.Tensor, r0: int, r1: int) -> None:
        grouped = out.view(r1 - r0, -1, self.group_size)
        scales = self.scale_zeros[:, r0:r1, 0].T[..., None]
        zeros = self.scale_zeros[:, r0:r1, 1].T[..., None]
        grouped.sub_(8).mul_(scales).add_(zeros)


def _unpack_rows(packed: torch.Tensor, out: torch.Tensor) -> None:
    """Integer values of whole blocks of torch's layout into `out` (`[rows, K]`).

    The transpose is done on bytes (one contiguous copy), then the nibbles are split
    into `out` contiguously: 1.8x faster than transposing into a float `out`."""
    import torch

    rows, k = out.shape
    half = BLOCK_ROWS // 2
    by_row = packed.reshape(rows // BLOCK_ROWS, k, half).transpose(1, 2).contiguous()
    target = out.view(rows // BLOCK_ROWS, 2, half, k)
    target[:, 0].copy_(torch.bitwise_and(by_row, 15))
    target[:, 1].copy_(by_row.bitwise_right_shift_(4))


def convertible(packed: torch.Tensor, scales: torch.Tensor, bits: int, group_size: int) -> bool:
    """True when torch's CPU int4 kernel can run this MLX-packed matrix."""
    import torch

    return (
        bits == 4
        and group_size in GROUP_SIZES
        and packed.device.type == "cpu"
        and packed.dtype == torch.int32
        and packed.dim() in (2, 3)
        and packed.shape[-2] % BLOCK_ROWS == 0
        and packed.shape[-1] % 2 == 0  # whole int64 lanes of bytes per row
        and scales.dtype in (torch.bfloat16, torch.float16, torch.float32)
        and layout_supported()
    )


def from_mlx(
    packed: torch.Tensor, scales: torch.Tensor, biases: torch.Tensor, group_size: int
) -> Int4Weight:
    """Rewrite MLX words in place into torch's layout; scales and biases into one
    `[..., K/g, N, 2]` tensor. The caller drops `scales` and `biases` afterwards."""
    import torch

    lead = packed.shape[:-2]
    n = packed.shape[-2]
    as_bytes = packed.view(torch.uint8)
    k = as_bytes.shape[-1] * 2
    stacked = as_bytes.reshape(-1, n, k // 2)
    for matrix in stacked:
        for r0 in range(0, n, CONVERT_ROWS):
            r1 = min(n, r0 + CONVERT_ROWS)
            _convert_in_place(matrix[r0:r1])
    groups = scales.shape[-1]
    scale_zeros = torch.empty((*lead, groups, n, 2), dtype=scales.dtype)
    scale_zeros[..., 0].copy_(scales.transpose(-1, -2))
    scale_zeros[..., 1].copy_(biases.transpose(-1, -2) + 8 * scales.transpose(-1, -2))
    return Int4Weight(as_bytes.view(*lead, n, k // 2), scale_zeros, group_size)


_LOW_NIBBLES = 0x0F0F0F0F0F0F0F0F
_HIGH_NIBBLES = 0xF0F0F0F0F0F0F0F0 - (1 << 64)  # as a signed int64


def _convert_in_place(rows: torch.Tensor) -> None:
    """MLX's bytes (values low nibble first) for whole blocks, to torch's bytes.

    In a block, byte `j` of column pair `m` holds row `j`'s value at column `2m` (low
    nibble) and row `j + 32`'s (high nibble); the next byte along holds column `2m + 1`.
    The nibbles are moved 8 bytes at a time (int64 lanes), then two transposing copies
    put each row's byte beside the other rows' (`layout_supported` checks the result
    against torch's own converter)."""
    import torch

    half = BLOCK_ROWS // 2
    blocks = rows.view(-1, 2, half, rows.shape[-1])
    count = blocks.shape[0]
    low, high = blocks[:, 0].view(torch.int64), blocks[:, 1].view(torch.int64)
    even = torch.bitwise_and(high, _LOW_NIBBLES).bitwise_left_shift_(4)
    even.bitwise_or_(torch.bitwise_and(low, _LOW_NIBBLES))
    odd = torch.bitwise_right_shift(low, 4).bitwise_and_(_LOW_NIBBLES)
    odd.bitwise_or_(torch.bitwise_and(high, _HIGH_NIBBLES))
    dest = rows.view(count, -1, 2, half)
    dest[:, :, 0].copy_(even.view(torch.uint8).view(count, half, -1).transpose(1, 2))
    dest[:, :, 1].copy_(odd.view(torch.uint8).view(count, half, -1).transpose(1, 2))


@cache
def layout_supported() -> bool:
    """Does this torch build have the CPU int4 kernel, with the block layout above?

    Converts a probe of two blocks whole and block by block, unpacks both with
    `_unpack_rows` and runs the kernel once; any difference (a torch release that
    changes its layout) turns the int4 path off for the process.
    """
    import torch

    ops = torch.ops.aten
    if not (
        hasattr(ops, "_convert_weight_to_int4pack_for_cpu")
        and hasattr(ops, "_weight_int4pack_mm_for_cpu")
    ):
        return False
    generator = torch.Generator().manual_seed(0)
    n, k, group = 2 * BLOCK_ROWS, 128, 64
    q = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=generator)
    try:
        whole = ops._convert_weight_to_int4pack_for_cpu(q, 1)
        by_block = torch.cat(
            [
                ops._convert_weight_to_int4pack_for_cpu(q[i : i + BLOCK_ROWS], 1)
                for i in range(0, n, BLOCK_ROWS)
            ]
        )
        if whole.dtype != torch.uint8 or tuple(whole.shape) != (n, k // 2):
            return False
        unpacked = torch.empty((n, k), dtype=torch.int32)
        _unpack_rows(whole, unpacked)
        mlx_bytes = (q[:, 0::2] | (q[:, 1::2] << 4)).to(torch.uint8)
        _convert_in_place(mlx_bytes)
        if not (
            torch.equal(whole, by_block)
            and torch.equal(unpacked, q)
            and torch.equal(mlx_bytes, whole)
        ):
            return False
        scale_zeros = torch.zeros((k // group, n, 2), dtype=torch.float32)
        scale_zeros[..., 0] = 1.0
        x = torch.eye(k, dtype=torch.float32)
        w = ops._weight_int4pack_mm_for_cpu(x, whole, group, scale_zeros)
        return bool(torch.equal(w.T, (q - 8).float()))
    except RuntimeError:
        return False
