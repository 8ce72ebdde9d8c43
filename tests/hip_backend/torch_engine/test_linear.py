"""A quantized linear: a full dequantized copy for a prefill chunk, none for a few rows."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent  # noqa: E402
from hip_backend.torch_engine.weights import QMV_MAX_ROWS, Linear  # noqa: E402

OUT, IN = 768, 512


def packed_linear() -> Linear:
    gen = torch.Generator().manual_seed(0)
    words = torch.randint(-(2**31), 2**31 - 1, (OUT, IN // 8), dtype=torch.int32, generator=gen)
    scales = (torch.rand(OUT, IN // 64, generator=gen) * 0.01).to(torch.bfloat16)
    biases = (-torch.rand(OUT, IN // 64, generator=gen) * 0.05).to(torch.bfloat16)
    bias = torch.randn(OUT, generator=gen).to(torch.bfloat16)
    return Linear(words, scales, biases, bias, bits=4, group_size=64)


@pytest.mark.parametrize("rows", [1, QMV_MAX_ROWS, QMV_MAX_ROWS + 1, 32])
def test_copy_only_for_many_rows_and_the_same_result_either_way(rows: int) -> None:
    lin = packed_linear()
    x = torch.randn(1, rows, IN).to(torch.bfloat16)
    queue = InflightQueue(0, LaggingEvent)
    with torch.no_grad():
        y = lin(x, queue)
        reference = torch.nn.functional.linear(
            x, lin.dense(InflightQueue(0, LaggingEvent)), lin.bias
        )
    output_bytes = rows * OUT * 2
    copy_bytes = OUT * IN * 2
    expected = output_bytes + (copy_bytes if rows > QMV_MAX_ROWS else 0)
    assert queue.open_bytes == expected
    assert y.shape == (1, rows, OUT)
    assert torch.allclose(y.float(), reference.float(), rtol=0, atol=0.05)


def test_a_routed_expert_never_makes_a_copy_even_for_a_prefill_chunk() -> None:
    lin = packed_linear()
    stacked = Linear(
        torch.stack([lin.weight, lin.weight.flip(0)]),
        torch.stack([lin.scales, lin.scales]),  # type: ignore[list-item]
        torch.stack([lin.biases, lin.biases]),  # type: ignore[list-item]
        None,
        bits=4,
        group_size=64,
    )
    expert = stacked.expert(1)
    x = torch.randn(1, 64, IN).to(torch.bfloat16)
    queue = InflightQueue(0, LaggingEvent)
    with torch.no_grad():
        y = expert(x, queue)
        reference = torch.nn.functional.linear(x, expert.dense(InflightQueue(0, LaggingEvent)))
    assert queue.open_bytes == 64 * OUT * 2  # the output only: no [OUT, IN] copy
    assert torch.allclose(y.float(), reference.float(), rtol=0, atol=0.05)
