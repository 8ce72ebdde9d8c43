"""Attention as MLX runs it: the unfused fallback's result and its score-matrix transient
against real MLX, and the per-backend choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.backend import Backend
from hip_backend.torch_engine.attention import (
    FUSED,
    MLX_FALLBACK,
    attention_kind,
    fused_attention,
    mlx_fallback_attention,
)
from hip_backend.torch_engine.decoder import causal_mask
from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent
from tests.installed import Later, needs

torch = Later("torch")
mx = Later("mlx.core")
np = Later("numpy")
pytestmark = needs("torch", "mlx", "numpy")

B, H, HKV, D = 1, 8, 2, 64


def to_torch(a: object) -> object:
    return torch.from_numpy(np.array(mx.array(a).astype(mx.float32))).to(torch.bfloat16)


def mlx_run(length: int, offset: int) -> tuple[object, int, tuple[object, object, object]]:
    """MLX's own SDPA on the CPU: its output and the peak it adds over q, k and v."""
    mx.random.seed(length + offset)
    q = mx.random.normal((B, H, length, D)).astype(mx.bfloat16)
    k = mx.random.normal((B, HKV, offset + length, D)).astype(mx.bfloat16)
    v = mx.random.normal((B, HKV, offset + length, D)).astype(mx.bfloat16)
    mx.eval(q, k, v)
    base = mx.get_active_memory()
    mx.reset_peak_memory()
    mask = "causal" if length > 1 else None
    out = mx.fast.scaled_dot_product_attention(q, k, v, scale=D**-0.5, mask=mask)
    mx.eval(out)
    return to_torch(out), mx.get_peak_memory() - base, (to_torch(q), to_torch(k), to_torch(v))


@pytest.mark.parametrize(("length", "offset"), [(256, 0), (128, 256), (1, 300)])
def test_the_fallback_gives_mlx_result_and_holds_what_mlx_holds(length: int, offset: int) -> None:
    expected, mlx_transient, (q, k, v) = mlx_run(length, offset)
    queue = InflightQueue(1 << 40, LaggingEvent)  # nothing completes: every buffer counted
    mask = causal_mask(length, offset, torch.device("cpu")) if length > 1 else None
    queue.op(mask)
    out = mlx_fallback_attention(q, k, v, mask, D**-0.5, queue)
    assert float((out.float() - expected.float()).abs().max()) <= 2e-3
    scores = B * H * length * (offset + length) * 2
    assert queue.open_bytes >= scores  # the score matrix is a real transient
    # MLX also builds the mask from two small aranges (a few KiB), and frees q * scale
    # after the first matmul; the emulated queue holds that until the batch completes,
    # as MLX-ROCm's in-flight batch does: at most that much more.
    slack = 8192
    q_scaled = B * H * length * D * 2
    assert mlx_transient - slack <= queue.open_bytes <= mlx_transient + q_scaled + slack


def test_the_in_place_softmax_is_torch_softmax() -> None:
    # The fallback writes the softmax over its input (MLX donates the buffer); a torch
    # release where aliasing changes the result fails here.
    scores = (torch.randn(2, 3, 5, 17, 300) * 4).to(torch.bfloat16)
    expected = torch.softmax(scores, dim=-1)
    torch.ops.aten._softmax.out(scores, -1, False, out=scores)
    assert torch.equal(scores, expected)


def test_fused_attention_has_no_score_matrix_and_the_same_result() -> None:
    _expected, _peak, (q, k, v) = mlx_run(128, 0)
    mask = causal_mask(128, 0, torch.device("cpu"))
    fused_queue = InflightQueue(1 << 40, LaggingEvent)
    fallback_queue = InflightQueue(1 << 40, LaggingEvent)
    fused = fused_attention(q, k, v, mask, D**-0.5, fused_queue)
    unfused = mlx_fallback_attention(q, k, v, mask, D**-0.5, fallback_queue)
    assert fused_queue.open_bytes == B * H * 128 * D * 2  # the output only
    assert fallback_queue.open_bytes > fused_queue.open_bytes + B * H * 128 * 128 * 2 - 1
    # Two BF16 roundings apart at most (outputs up to about 2 in magnitude).
    assert float((fused.float() - unfused.float()).abs().max()) <= 0.02


@pytest.mark.parametrize(
    ("device_kind", "expected"),
    [(Backend.CPU, MLX_FALLBACK), (Backend.ROCM, MLX_FALLBACK), (Backend.CUDA, FUSED)],
)
def test_each_backend_gets_the_attention_mlx_runs_there(
    device_kind: Backend, expected: str
) -> None:
    assert attention_kind(device_kind) == expected


DECODE_GROWTH = """
import torch
from hip_backend.torch_engine.attention import mlx_fallback_attention
from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent

def high_water():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024

torch.set_grad_enabled(False)
q = torch.randn(1, 8, 1, 64).to(torch.bfloat16)
keys = torch.randn(1, 2, 400, 64).to(torch.bfloat16)
queue = InflightQueue(0, LaggingEvent, emulate=False)
mlx_fallback_attention(q, keys[:, :, :128], keys[:, :, :128], None, 0.125, queue)
start = high_water()
for length in range(129, 193):  # 64 decode steps: a new key length each
    mlx_fallback_attention(q, keys[:, :, :length], keys[:, :, :length], None, 0.125, queue)
print(high_water() - start)
"""


def test_decode_steps_do_not_grow_memory_with_each_new_key_length() -> None:
    # A fresh interpreter: its high-water mark is this loop's alone. Through oneDNN the
    # 64 steps grew it by about 70 MB (a cached primitive per shape); MLX holds nothing.
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", DECODE_GROWTH],
        capture_output=True,
        text=True,
        timeout=120,
        env={"MALLOC_MMAP_THRESHOLD_": "16384", "PATH": "/usr/bin:/bin"},
        cwd=str(Path(__file__).resolve().parents[3]),
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) < 2 << 20


class BlockLedger(InflightQueue):
    """The CPU run's queue (no emulation, MLX's stream a block behind), noting the
    tensors each block hands it and, at each block's end, the tensors it holds."""

    def __init__(self) -> None:
        super().__init__(0, LaggingEvent, emulate=False, block_lag=True)
        self.handed: list[set[int]] = [set()]
        self.held_at_end: list[set[int]] = []

    def op(self, *outputs: object) -> None:
        self.handed[-1] |= {id(t) for t in outputs if t is not None}
        super().op(*outputs)

    def end_block(self) -> None:
        self.held_at_end.append({id(t) for t in self._this_block + self._previous_block})
        self.handed.append(set())
        super().end_block()


def test_a_block_s_buffers_outlive_it_by_one_block_in_the_decoder(tmp_path: Path) -> None:
    """At each block's end the queue holds every output that block and the one before it
    handed (q/k/v, norms, RoPE, q * scale, scores, mask, output...), never older ones;
    the first attention block's holdings include its [H, L, S] score matrix."""
    from hip_backend import write_random_model
    from hip_backend.torch_engine import ModelSource, build_model, resolve_source
    from tests.hip_backend.mlx_models import LLAMA_CONFIG

    write_random_model(tmp_path, {**LLAMA_CONFIG, "torch_dtype": "bfloat16"})
    resolved = resolve_source(ModelSource(folder=tmp_path))
    model = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
    queue = BlockLedger()
    with torch.no_grad():
        model.forward(torch.arange(64)[None], model.new_cache(queue), queue)
    blocks = 2 * LLAMA_CONFIG["num_hidden_layers"]  # attention, MLP, per layer
    assert len(queue.held_at_end) == blocks
    for i, held in enumerate(queue.held_at_end):
        assert held == queue.handed[i] | (queue.handed[i - 1] if i else set()), i
    assert len(queue.handed[0]) >= 12  # q, k, v, 2 norms, 2 RoPE, mask, q*scale, scores...
    queue.sync()
    assert not queue._this_block and not queue._previous_block
