"""MLX affine dequantization in torch: packed U32 words, scales and biases to floats.

Layout (mlx `quantize`, mode affine): each row of `in` logical weights is stored
as `in * bits / 32` uint32 words, values packed low bits first; every `group`
consecutive weights share one scale and one bias, and `w = scale * q + bias`.
On a little-endian host the words' bytes hold the values in order, so the
unpacking works on a uint8 view. The arithmetic is done in the scales' dtype,
multiply then add, each rounded, which is what `mx.dequantize` does: the result
is bit-identical to it (tests/hip_backend/torch_engine/test_quant.py).

Rows are processed in chunks so the unpacking temporaries stay small: the
transient that matters is the dequantized copy itself, as in MLX's ROCm
dequantize-and-GEMM path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

CHUNK_ELEMENTS = 1 << 22
"""Logical weights unpacked per step on the CPU (4 Mi: 2-4 MiB of uint8 temporaries)."""
GPU_CHUNK_ELEMENTS = 1 << 24
"""On a GPU, fewer and larger steps (8-16 MiB of temporaries) keep kernel launches down."""


def _unpack_into(out: torch.Tensor, packed_u8: torch.Tensor, bits: int) -> None:
    """Write the integer values of `packed_u8` ([rows, in*bits/8]) into `out` ([rows, in])."""
    rows = packed_u8.shape[0]
    if bits == 8:
        out.copy_(packed_u8)
        return
    per_byte = 8 // bits
    mask = (1 << bits) - 1
    slots = out.view(rows, -1, per_byte)
    for i in range(per_byte):
        shifted = packed_u8 >> (i * bits) if i else packed_u8
        slots[..., i] = shifted & mask if i < per_byte - 1 else shifted


def dequantize(
    packed: torch.Tensor,
    scales: torch.Tensor,
    biases: torch.Tensor,
    bits: int,
    group_size: int,
) -> torch.Tensor:
    """The float weights of one quantized matrix (2-D) or rows of one (any leading dims).

    `packed` has shape `[..., in * bits / 32]` (int32 or uint32 words), `scales`
    and `biases` `[..., in / group_size]`. Returns `[..., in]` in the scales' dtype.
    """
    import torch

    if bits not in (2, 4, 8):
        raise ValueError(f"{bits}-bit affine packing is not byte aligned")
    lead = packed.shape[:-1]
    words = packed.shape[-1]
    in_features = words * 32 // bits
    groups = in_features // group_size
    if groups * group_size != in_features or scales.shape[-1] != groups:
        raise ValueError(
            f"packed width {words} at {bits} bits does not match {scales.shape[-1]} "
            f"groups of {group_size}"
        )
    flat_packed = packed.reshape(-1, words)
    flat_scales = scales.reshape(-1, groups)
    flat_biases = biases.reshape(-1, groups)
    rows = flat_packed.shape[0]
    out = torch.empty((rows, in_features), dtype=scales.dtype, device=packed.device)
    per_step = CHUNK_ELEMENTS if packed.device.type == "cpu" else GPU_CHUNK_ELEMENTS
    step = max(1, per_step // max(1, in_features))
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        chunk = out[r0:r1]
        _unpack_into(chunk, flat_packed[r0:r1].view(torch.uint8), bits)
        grouped = chunk.view(r1 - r0, groups, group_size)
        grouped.mul_(flat_scales[r0:r1, :, None]).add_(flat_biases[r0:r1, :, None])
    return out.view(*lead, in_features)


QMM_CHUNK_ELEMENTS = 1 << 20
"""Logical weights per step of the fused kernel on the CPU: a float32 slice of at most
4 MiB, small enough to stay in the L3 cache between its scaling and its GEMM, large enough
that per-step dispatch costs little (1 Mi beat 256 Ki by 1.3-1.6x on this CPU)."""
GPU_QMM_CHUNK_ELEMENTS = 1 << 22
"""On a GPU: at most 16 MiB of float32 slice per step (MLX's qmv allocates none; this
keeps the difference small beside any real model's transients)."""


def quantized_matmul(
    x: torch.Tensor,
    packed: torch.Tensor,
    scales: torch.Tensor,
    biases: torch.Tensor,
    bits: int,
    group_size: int,
) -> torch.Tensor:
    """`x @ dequantize(packed, scales, biases).T` without a dequantized copy of the weights.

    MLX's quantized matrix-vector kernels (`qmv`) work this way: per group they
    accumulate `sum(q * x)` in float32 and add `scale * that + bias * sum(x)`; no
    16-bit weight exists at any point. Here the bytes of a slice of rows are used
    as they are: a byte holding the values `n_0 .. n_{p-1}` (low bits first) and
    its shifts `h_i = byte >> (bits * i)` satisfy `n_i = h_i - 2**bits * h_{i+1}`,
    so `sum_i n_i x_i = sum_i h_i c_i` with `c_0 = x_0`, `c_i = x_i - 2**bits x_{i-1}`.
    Each `h_i` times the group scale is one float32 pass over the slice, then one
    GEMM; only a cache-sized float32 slice (at most 4 MiB) is alive at a time. Accumulates in
    float32 and rounds once to `x`'s dtype. Cost per weight does not depend on
    the number of rows of `x`, so it also serves a MoE expert's few dozen tokens.
    """
    import torch

    if bits not in (2, 4, 8):
        raise ValueError(f"{bits}-bit affine packing is not byte aligned")
    out_features, words = packed.shape
    in_features = words * 32 // bits
    groups = in_features // group_size
    if groups * group_size != in_features or scales.shape[-1] != groups:
        raise ValueError(
            f"packed width {words} at {bits} bits does not match {scales.shape[-1]} "
            f"groups of {group_size}"
        )
    if x.shape[-1] != in_features:
        raise ValueError(f"input width {x.shape[-1]} does not match {in_features} weights")
    per_byte = 8 // bits
    lead = x.shape[:-1]
    xf = x.reshape(-1, in_features).float()
    m = xf.shape[0]
    # The bias term for every output at once: [M, groups] @ [groups, out].
    acc = (xf.view(m, groups, group_size).sum(-1) @ biases.float().T).T.contiguous()
    pairs = xf.view(m, in_features // per_byte, per_byte)
    coeffs = [pairs[..., 0].T.contiguous()]
    for i in range(1, per_byte):
        coeffs.append((pairs[..., i] - (1 << bits) * pairs[..., i - 1]).T.contiguous())
    per_group = group_size // per_byte
    as_bytes = packed.view(torch.uint8).view(out_features, groups, per_group)
    per_step = QMM_CHUNK_ELEMENTS if packed.device.type == "cpu" else GPU_QMM_CHUNK_ELEMENTS
    step = min(out_features, max(1, per_step // max(1, in_features)))
    width = in_features // per_byte
    scaled, shifted, scale = _scratch(packed.device, step, groups, per_group)
    for r0 in range(0, out_features, step):
        r1 = min(out_features, r0 + step)
        n = r1 - r0
        chunk = as_bytes[r0:r1]
        scale[:n].copy_(scales[r0:r1, :, None])
        for i, coeff in enumerate(coeffs):
            source = torch.bitwise_right_shift(chunk, bits * i, out=shifted[:n]) if i else chunk
            # Convert, then scale in place: a mixed-dtype mul would cast into a
            # temporary buffer of its own on every call.
            scaled[:n].copy_(source).mul_(scale[:n])
            acc[r0:r1].addmm_(scaled[:n].view(n, width), coeff)
    return acc.T.to(x.dtype).reshape(*lead, out_features)


_CPU_SCRATCH: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}


def _scratch(
    device: torch.device, step: int, groups: int, per_group: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float32 slice, shifted bytes and slice scales for one step of the fused kernel.

    On the CPU one buffer of each (QMM_CHUNK_ELEMENTS: 4 MiB + 1 MiB + 128 KiB) serves
    every call: with the measuring child's 16 KiB mmap threshold each fresh buffer is
    an mmap and a page fault per 4 KiB, and allocating per slice made decode 10x
    slower. `warm_up_kernels` creates them before the baseline. On a GPU the caching
    allocator makes fresh buffers cheap, and they stay transients.
    """
    import torch

    elements = step * groups * per_group
    if device.type != "cpu":
        return (
            torch.empty((step, groups, per_group), dtype=torch.float32, device=device),
            torch.empty((step, groups, per_group), dtype=torch.uint8, device=device),
            torch.empty((step, groups, 1), dtype=torch.float32, device=device),
        )
    size = max(QMM_CHUNK_ELEMENTS, elements)
    if size not in _CPU_SCRATCH:
        _CPU_SCRATCH.clear()
        _CPU_SCRATCH[size] = (
            torch.empty(size, dtype=torch.float32),
            torch.empty(size, dtype=torch.uint8),
            torch.empty(size // 32, dtype=torch.float32),
        )
    f32, u8, scale = _CPU_SCRATCH[size]
    return (
        f32[:elements].view(step, groups, per_group),
        u8[:elements].view(step, groups, per_group),
        scale[: step * groups].view(step, groups, 1),
    )
