"""A quantized linear: a full dequantized copy for a prefill chunk, none for a few rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent
from hip_backend.torch_engine.weights import QMV_MAX_ROWS, Linear
from tests.hip_backend.mlx_models import LLAMA_CONFIG
from tests.installed import Later, needs

torch = Later("torch")
pytestmark = needs("torch")

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


class Recording(InflightQueue):
    """The queue, noting the size of every output handed to it."""

    def __init__(self) -> None:
        super().__init__(0, LaggingEvent)
        self.sizes: list[int] = []

    def op(self, *outputs: Any) -> None:
        self.sizes += [int(t.nbytes) for t in outputs if t is not None]
        super().op(*outputs)


def test_a_cpu_run_without_emulation_makes_no_weight_copy_as_mlx_s_cpu_kernels(
    tmp_path: Path,
) -> None:
    """MLX's CPU `quantized_matmul` adds only its output at any row count; the CPU run
    that mirrors it (`fuse_all_quantized`) holds no dequantized weight, same logits."""
    from hip_backend import write_random_model
    from hip_backend.torch_engine import ModelSource, build_model, resolve_source

    config = {**LLAMA_CONFIG, "torch_dtype": "bfloat16"}
    config["quantization"] = {"group_size": 64, "bits": 4}
    write_random_model(tmp_path, config)
    resolved = resolve_source(ModelSource(folder=tmp_path))
    model = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
    tokens = torch.arange(32)[None]  # a 32-row chunk: the copy path before
    smallest_copy = config["hidden_size"] ** 2 * 2  # q_proj's, in 16 bits
    logits = []
    for fuse in (False, True):
        if fuse:
            assert model.fuse_all_quantized() == len(model.linears())  # all 4-bit
        queue = Recording()
        with torch.no_grad():
            logits.append(model.forward(tokens, model.new_cache(queue), queue))
        # at 32 rows every activation is far below the smallest weight copy
        assert (max(queue.sizes) >= smallest_copy) is not fuse, (fuse, max(queue.sizes))
    assert torch.allclose(logits[0].float(), logits[1].float(), rtol=0, atol=0.1)


def test_a_narrow_module_on_many_rows_holds_no_float32_copy_of_its_input() -> None:
    """A MoE router (32 outputs, too few for torch's int4 kernel) on a 511-token chunk:
    MLX's CPU `quantized_matmul` adds only its output. The portable kernel would hold
    float32 copies of the input (511 x 512 x 4 bytes each); the 32 KB dequantized weight
    is the smaller transient, and no buffer of the call is larger than it."""
    from torch.utils._python_dispatch import TorchDispatchMode

    gen = torch.Generator().manual_seed(0)
    out, rows = 32, 511
    words = torch.randint(-(2**31), 2**31 - 1, (out, IN // 8), dtype=torch.int32, generator=gen)
    scales = (torch.rand(out, IN // 64, generator=gen) * 0.01).to(torch.bfloat16)
    biases = (-torch.rand(out, IN // 64, generator=gen) * 0.05).to(torch.bfloat16)
    router = Linear(words, scales, biases, bits=4, group_size=64, no_copy=True)
    x = torch.randn(1, rows, IN).to(torch.bfloat16)

    inputs = {x.untyped_storage().data_ptr()}  # views of the input are not new buffers

    class Largest(TorchDispatchMode):  # type: ignore[no-untyped-call]
        largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            result = func(*args, **(kwargs or {}))
            for t in result if isinstance(result, tuple | list) else [result]:
                if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in inputs:
                    Largest.largest = max(Largest.largest, t.untyped_storage().nbytes())
            return result

    with torch.no_grad():
        reference = torch.nn.functional.linear(x, router.dense(InflightQueue(0, LaggingEvent)))
        with Largest():  # type: ignore[no-untyped-call]
            y = router(x, InflightQueue(0, LaggingEvent))
    assert Largest.largest <= max(out * IN * 2, rows * out * 2)
    assert rows * IN * 4 > 10 * Largest.largest  # the input's float32 copy, not made
    assert torch.allclose(y.float(), reference.float(), rtol=0, atol=0.05)
