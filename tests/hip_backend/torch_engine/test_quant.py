"""MLX affine dequantization in torch is bit-identical to mlx.core.dequantize."""

from __future__ import annotations

from typing import Any

import pytest

from hip_backend.torch_engine.quant import dequantize, quantized_matmul
from tests.installed import Later, needs

torch = Later("torch")
mx = Later("mlx.core")
np = Later("numpy")
pytestmark = needs("torch", "mlx", "numpy")


def to_torch(a: object, dtype: object) -> object:
    """An mlx array as a torch tensor of `dtype` (via float32, exact for 16-bit values)."""
    return torch.from_numpy(np.array(mx.array(a).astype(mx.float32))).to(dtype)


def quantized(
    shape: tuple[int, ...], dtype_name: str, bits: int, group: int, seed: int = 0
) -> tuple[Any, Any, Any, Any]:
    mx.random.seed(seed)
    w = (mx.random.normal(shape) * 0.05).astype(getattr(mx, dtype_name))
    packed, scales, biases = mx.quantize(w, group_size=group, bits=bits)
    ref = mx.dequantize(packed, scales, biases, group_size=group, bits=bits)
    tdt = getattr(torch, dtype_name)  # MLX names its dtypes as torch does
    t_packed = torch.from_numpy(np.array(packed).view(np.int32))
    return t_packed, to_torch(scales, tdt), to_torch(biases, tdt), to_torch(ref, tdt)


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("group", [32, 64, 128])
def test_dequantize_is_bit_identical_to_mlx(dtype_name: str, bits: int, group: int) -> None:
    packed, scales, biases, ref = quantized((96, 256), dtype_name, bits, group)
    out = dequantize(packed, scales, biases, bits, group)
    assert out.dtype == ref.dtype
    assert out.shape == (96, 256)
    assert torch.equal(out, ref)


def test_stacked_experts_and_gathered_rows_match_mlx() -> None:
    packed, scales, biases, ref = quantized((4, 48, 128), "bfloat16", 4, 64, seed=3)
    assert torch.equal(dequantize(packed, scales, biases, 4, 64), ref)
    rows = torch.tensor([5, 0, 47, 5])
    gathered = dequantize(packed[2][rows], scales[2][rows], biases[2][rows], 4, 64)
    assert torch.equal(gathered, ref[2][rows])


def test_large_matrix_is_unpacked_in_chunks_identically(monkeypatch: pytest.MonkeyPatch) -> None:
    import hip_backend.torch_engine.quant as quant

    packed, scales, biases, ref = quantized((300, 512), "float16", 4, 64, seed=7)
    monkeypatch.setattr(quant, "CHUNK_ELEMENTS", 512 * 7)  # 7 rows per step, uneven tail
    assert torch.equal(quant.dequantize(packed, scales, biases, 4, 64), ref)


def test_widths_that_are_not_byte_aligned_are_refused() -> None:
    packed = torch.zeros((4, 6), dtype=torch.int32)  # 64 weights at 3 bits
    scales = torch.ones((4, 1), dtype=torch.float16)
    with pytest.raises(ValueError, match="3-bit"):
        dequantize(packed, scales, scales, 3, 64)
    with pytest.raises(ValueError, match="does not match"):
        dequantize(packed, torch.ones((4, 2), dtype=torch.float16), scales, 4, 64)


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("group", [32, 64, 128])
def test_fused_matmul_matches_the_dequantized_weights_without_a_copy(
    dtype_name: str, bits: int, group: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The no-copy kernel gives mx.dequantize's weights times x, accumulated in float32
    (checked against a float64 product of the bit-identical dequantized weights, within
    the rounding of those weights and of the output)."""
    import hip_backend.torch_engine.quant as quant

    monkeypatch.setattr(quant, "QMM_CHUNK_ELEMENTS", 256 * 9)  # 9 rows per step, uneven tail
    packed, scales, biases, ref = quantized((100, 256), dtype_name, bits, group, seed=bits)
    dtype = getattr(torch, dtype_name)
    for rows in (1, 3, 8, 40):
        x = torch.randn(2, rows, 256, generator=torch.Generator().manual_seed(rows)).to(dtype)
        y = quant.quantized_matmul(x, packed, scales, biases, bits, group)
        exact = x.double() @ ref.double().T
        assert y.dtype == dtype
        assert y.shape == (2, rows, 100)
        # mx.dequantize rounds each weight (twice: scale * q, then + bias), the kernel
        # does not; and the output is rounded once to 16 bits. Float32 accumulation
        # adds far less than either.
        ulp = 2.0**-8 if dtype == torch.bfloat16 else 2.0**-11
        bound = (x.double().abs() @ ref.double().abs().T) * ulp + exact.abs() * ulp / 2
        assert bool(((y.double() - exact).abs() <= bound).all())


def test_fused_matmul_refuses_mismatched_widths() -> None:
    packed, scales, biases, _ = quantized((8, 128), "float16", 4, 64)
    with pytest.raises(ValueError, match="input width"):
        quantized_matmul(torch.ones(1, 64, dtype=torch.float16), packed, scales, biases, 4, 64)
