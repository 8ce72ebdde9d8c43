"""MLX affine 4-bit weights in torch's CPU int4 layout, run by torch's own int4 kernel.

MLX's `qmv`/`qmm` kernels read packed 4-bit words and never build a 16-bit weight.
torch ships the CPU equivalent: `aten._weight_int4pack_mm_for_cpu` (AVX-512/AVX2,
float32 accumulation), which computes `x @ W.T` with `W = (q - 8) * scale + zero`
per group. MLX stores `W = q * scale + bias`, so `zero = bias + 8 * scale`: the same
weights, with the zero point rounded once to the scales' dtype (relative error at
most 2^-9 of the zero for BF16, 2^-11 for F16; MLX adds its bias in float32).

The conversion costs no memory: torch's CPU layout keeps each block of B rows in the
same bytes as MLX's words for those rows (`[N/B, K, B/2]` bytes, two rows of a block
sharing each byte), so the words are rewritten in place a chunk of rows at a time; the
scales and biases become one `[K/g, N, 2]` tensor of the same size.

The block depends on the vector unit torch dispatched to (`int4mm_kernel.cpp`,
`weight_to_int4pack_kernel`): 64 rows on AVX-512 (rows `j` and `j + 32` share a byte),
32 on AVX2 (rows `j` and `j + 16`), and 32 rows of adjacent pairs (rows `2j` and
`2j + 1`) in the portable build. That layout is torch's, not a public contract:
`cpu_layout()` picks the candidate for `torch.backends.cpu.get_cpu_capability()` and
proves it on a probe once per process; a layout it cannot prove (another torch, another
vector unit) and any module it does not fit (another width, group size or device) keep
the portable kernel in `quant.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

GROUP_SIZES = (32, 64, 128, 256)
"""The group sizes torch's CPU int4 kernel accepts (MLX's default is 64)."""


@dataclass(frozen=True)
class CpuLayout:
    """How torch's CPU int4 converter packs one block of rows."""

    name: str
    """What the benchmark and the tests print: `avx512-64`, `avx2-32`, `pairs-32`."""
    block_rows: int
    """Rows per block: packed bytes `[N / block_rows, K, block_rows / 2]`."""
    split_halves: bool
    """True: lane `j` holds rows `j` (low nibble) and `j + block_rows / 2` (high);
    False: rows `2j` and `2j + 1`."""

    @property
    def lanes(self) -> int:
        """Bytes per block and column: each holds two rows."""
        return self.block_rows // 2

    def by_pair(self, block_rows_first: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows of blocks `[count, block_rows, ...]` that go to the low and to the high
        nibble of each lane, each `[count, lanes, ...]` (views, no copy)."""
        rest = block_rows_first.shape[2:]
        if self.split_halves:
            halves = block_rows_first.view(-1, 2, self.lanes, *rest)
            return halves[:, 0], halves[:, 1]
        pairs = block_rows_first.view(-1, self.lanes, 2, *rest)
        return pairs[:, :, 0], pairs[:, :, 1]

    def lane_of(self, row_in_block: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """For rows of a block: the lane holding each, and whether in the high nibble."""
        if self.split_halves:
            return row_in_block % self.lanes, row_in_block >= self.lanes
        return row_in_block // 2, row_in_block % 2 == 1


LAYOUTS = {
    "AVX512": CpuLayout("avx512-64", 64, split_halves=True),
    "AVX2": CpuLayout("avx2-32", 32, split_halves=True),
    "DEFAULT": CpuLayout("pairs-32", 32, split_halves=False),
}
"""The candidate for each of `torch.backends.cpu.get_cpu_capability()`'s answers on x86
(`BLOCK_N = Vectorized<float>::size() * 4` in torch's kernel); the probe has the last word."""
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
    layout: CpuLayout
    """The layout `packed` was written in (the process's `cpu_layout()`)."""

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
        return Int4Weight(self.packed[index], self.scale_zeros[index], self.group_size, self.layout)

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

        layout = self.layout
        n, k = self.out_features, self.in_features
        out = torch.empty((n, k), dtype=self.dtype)
        blocks_per_step = max(1, CONVERT_ROWS // layout.block_rows)
        for b0 in range(0, n // layout.block_rows, blocks_per_step):
            r0 = b0 * layout.block_rows
            r1 = min(n, r0 + blocks_per_step * layout.block_rows)
            _unpack_rows(layout, self.packed[r0:r1], out[r0:r1])
            self._scale_rows(out[r0:r1], r0, r1)
        return out

    def dequantize_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """Selected rows (an embedding lookup) in float, `[*rows.shape, K]`."""
        import torch

        layout = self.layout
        flat = rows.reshape(-1).long()
        k = self.in_features
        blocks = self.packed.view(-1, k, layout.lanes)
        lane, high = layout.lane_of(flat % layout.block_rows)
        raw = blocks[flat // layout.block_rows, :, lane]  # [R, K] bytes
        q = torch.where(high[:, None], raw >> 4, raw & 15).to(self.dtype)
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


def _unpack_rows(layout: CpuLayout, packed: torch.Tensor, out: torch.Tensor) -> None:
    """Integer values of whole blocks of torch's layout into `out` (`[rows, K]`).

    The transpose is done on bytes (one contiguous copy), then the nibbles are split
    into `out`: 1.8x faster than transposing into a float `out`."""
    import torch

    rows, k = out.shape
    blocks = rows // layout.block_rows
    by_lane = packed.reshape(blocks, k, layout.lanes).transpose(1, 2).contiguous()
    low, high = layout.by_pair(out.view(blocks, layout.block_rows, k))
    low.copy_(torch.bitwise_and(by_lane, 15))
    high.copy_(by_lane.bitwise_right_shift_(4))


def convertible(packed: torch.Tensor, scales: torch.Tensor, bits: int, group_size: int) -> bool:
    """True when torch's CPU int4 kernel can run this MLX-packed matrix."""
    import torch

    return (
        bits == 4
        and group_size in GROUP_SIZES
        and packed.device.type == "cpu"
        and packed.dtype == torch.int32
        and packed.dim() in (2, 3)
        and packed.shape[-1] % 2 == 0  # whole int64 lanes of bytes per row
        and scales.dtype in (torch.bfloat16, torch.float16, torch.float32)
        and (layout := cpu_layout()) is not None
        and packed.shape[-2] % layout.block_rows == 0
    )


def from_mlx(
    packed: torch.Tensor, scales: torch.Tensor, biases: torch.Tensor, group_size: int
) -> Int4Weight:
    """Rewrite MLX words in place into torch's layout; scales and biases into one
    `[..., K/g, N, 2]` tensor. The caller drops `scales` and `biases` afterwards
    (`convertible` first: it needs the process's proven layout)."""
    import torch

    layout = cpu_layout()
    if layout is None:
        raise RuntimeError("torch's CPU int4 layout was not proven on this machine")
    lead = packed.shape[:-2]
    n = packed.shape[-2]
    as_bytes = packed.view(torch.uint8)
    k = as_bytes.shape[-1] * 2
    stacked = as_bytes.reshape(-1, n, k // 2)
    for matrix in stacked:
        for r0 in range(0, n, CONVERT_ROWS):
            r1 = min(n, r0 + CONVERT_ROWS)
            _convert_in_place(layout, matrix[r0:r1])
    groups = scales.shape[-1]
    scale_zeros = torch.empty((*lead, groups, n, 2), dtype=scales.dtype)
    scale_zeros[..., 0].copy_(scales.transpose(-1, -2))
    scale_zeros[..., 1].copy_(biases.transpose(-1, -2) + 8 * scales.transpose(-1, -2))
    return Int4Weight(as_bytes.view(*lead, n, k // 2), scale_zeros, group_size, layout)


_LOW_NIBBLES = 0x0F0F0F0F0F0F0F0F
_HIGH_NIBBLES = 0xF0F0F0F0F0F0F0F0 - (1 << 64)  # as a signed int64


def _convert_in_place(layout: CpuLayout, rows: torch.Tensor) -> None:
    """MLX's bytes (values low nibble first) for whole blocks, to torch's bytes.

    In a block, lane `j` of column pair `m` holds, at column `2m`, the value of the
    lane's low row (low nibble) and of its high row (`CpuLayout.split_halves`); the
    next byte along holds column `2m + 1`. The nibbles are moved 8 bytes at a time
    (int64 lanes), then two transposing copies put each lane's byte beside the other
    lanes' (`cpu_layout` checks the result against torch's own converter)."""
    import torch

    half = layout.lanes
    count = rows.shape[0] // layout.block_rows
    low_rows, high_rows = layout.by_pair(rows.view(count, layout.block_rows, rows.shape[-1]))
    low, high = low_rows.view(torch.int64), high_rows.view(torch.int64)
    even = torch.bitwise_and(high, _LOW_NIBBLES).bitwise_left_shift_(4)
    even.bitwise_or_(torch.bitwise_and(low, _LOW_NIBBLES))
    odd = torch.bitwise_right_shift(low, 4).bitwise_and_(_LOW_NIBBLES)
    odd.bitwise_or_(torch.bitwise_and(high, _HIGH_NIBBLES))
    dest = rows.view(count, -1, 2, half)
    dest[:, :, 0].copy_(even.view(torch.uint8).view(count, half, -1).transpose(1, 2))
    dest[:, :, 1].copy_(odd.view(torch.uint8).view(count, half, -1).transpose(1, 2))


def layout_supported() -> bool:
    """Does this torch build run the int4 kernel in a layout proven on this machine?"""
    return cpu_layout() is not None


def cpu_capability() -> str:
    """torch's CPU dispatch level (`AVX512`, `AVX2`, `DEFAULT`, ...); set
    `ATEN_CPU_CAPABILITY` before torch starts to run a lower one."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability())


@cache
def cpu_layout() -> CpuLayout | None:
    """The layout torch's CPU int4 converter writes here, proven on a probe; None keeps
    the portable kernel.

    Converts a probe of two blocks whole and block by block, unpacks both with
    `_unpack_rows`, rewrites MLX's bytes for it and runs the kernel once; any
    difference (a torch release that changes its layout) turns the int4 path off for
    the process.
    """
    import torch

    ops = torch.ops.aten
    layout = LAYOUTS.get(cpu_capability())
    if layout is None or not (
        hasattr(ops, "_convert_weight_to_int4pack_for_cpu")
        and hasattr(ops, "_weight_int4pack_mm_for_cpu")
    ):
        return None
    generator = torch.Generator().manual_seed(0)
    n, k, group = 2 * layout.block_rows, 128, 64
    q = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=generator)
    try:
        whole = ops._convert_weight_to_int4pack_for_cpu(q, 1)
        by_block = torch.cat(
            [
                ops._convert_weight_to_int4pack_for_cpu(q[i : i + layout.block_rows], 1)
                for i in range(0, n, layout.block_rows)
            ]
        )
        if whole.dtype != torch.uint8 or tuple(whole.shape) != (n, k // 2):
            return None
        unpacked = torch.empty((n, k), dtype=torch.int32)
        _unpack_rows(layout, whole, unpacked)
        mlx_bytes = (q[:, 0::2] | (q[:, 1::2] << 4)).to(torch.uint8)
        _convert_in_place(layout, mlx_bytes)
        if not (
            torch.equal(whole, by_block)
            and torch.equal(unpacked, q)
            and torch.equal(mlx_bytes, whole)
        ):
            return None
        scale_zeros = torch.zeros((k // group, n, 2), dtype=torch.float32)
        scale_zeros[..., 0] = 1.0
        x = torch.eye(k, dtype=torch.float32)
        w = ops._weight_int4pack_mm_for_cpu(x, whole, group, scale_zeros)
        return layout if bool(torch.equal(w.T, (q - 8).float())) else None
    except RuntimeError:
        return None
