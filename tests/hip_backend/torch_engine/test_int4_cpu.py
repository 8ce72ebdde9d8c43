"""MLX 4-bit weights rewritten in place for torch's CPU int4 kernel: same weights, no
extra bytes, no weight copy at any row count, and the portable path where it cannot run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hip_backend.model.random_weights import write_random_model
from hip_backend.model.source import ModelSource, resolve_source
from hip_backend.torch_engine import int4_cpu, weights
from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent
from hip_backend.torch_engine.loader import build_model
from hip_backend.torch_engine.weights import Linear
from tests.hip_backend.torch_engine.test_quant import quantized
from tests.installed import Later, needs

torch = Later("torch")
mx = Later("mlx.core")
np = Later("numpy")
pytestmark = needs("torch", "mlx", "numpy")

DTYPES = ("bfloat16", "float16")
"""Names of torch dtypes (`getattr(torch, name)`: torch is imported by the first test)."""


def mlx_linear(rows: int, cols: int, dtype_name: str, group: int = 64) -> tuple[Linear, Any]:
    """A Linear in MLX's layout from `mx.quantize`, and `mx.dequantize`'s weights."""
    packed, scales, biases, ref = quantized((rows, cols), dtype_name, 4, group)
    return Linear(packed, scales, biases, None, 4, group), ref


ROOT = Path(__file__).resolve().parents[3]
EXPECTED_LAYOUT = {"AVX512": "avx512-64", "AVX2": "avx2-32", "DEFAULT": "pairs-32"}
"""torch's three x86 CPU int4 layouts (`weight_to_int4pack_kernel`)."""


REQUIRED_FLAGS = {
    "AVX512": frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq"}),
    "AVX2": frozenset({"avx2", "fma"}),
}
"""The /proc/cpuinfo flags torch's dispatch level needs (aten/src/ATen/cpu/Utils.cpp)."""


def cpu_flags() -> frozenset[str]:
    """This CPU's feature flags (empty off Linux: nothing is skipped then)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset(f for flags in REQUIRED_FLAGS.values() for f in flags)
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def block_rows() -> int:
    layout = int4_cpu.cpu_layout()
    assert layout is not None
    return layout.block_rows


def test_this_machine_runs_the_int4_kernel_in_the_layout_of_its_vector_unit() -> None:
    # The pinned torch (requirements/constraints.txt) must keep the fast decode path on
    # whatever vector unit this machine has; a torch upgrade that changes a layout
    # fails here, not silently slow.
    capability = int4_cpu.cpu_capability()
    assert capability in EXPECTED_LAYOUT, capability
    layout = int4_cpu.cpu_layout()
    assert layout is not None and layout.name == EXPECTED_LAYOUT[capability]


@pytest.mark.parametrize("capability", sorted(EXPECTED_LAYOUT))
def test_each_vector_unit_this_cpu_has_gets_its_own_layout_proven(capability: str) -> None:
    # A fresh interpreter per capability: torch picks its kernels once, at start-up.
    # An AVX-512 machine checks all three layouts, an AVX2 machine two; a level the
    # CPU lacks is skipped: torch reports a lower one, or (forced to AVX-512 on a CPU
    # without it, as on an AMD Zen 3) dies of SIGILL, so the CPU's own flags decide first.
    missing = REQUIRED_FLAGS.get(capability, frozenset()) - cpu_flags()
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(sorted(missing))} for torch's {capability} kernels")
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability.lower()}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.hip_backend.torch_engine.int4_layout_check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    if report["capability"] != capability:
        pytest.skip(f"this CPU cannot run torch's {capability} kernels")
    assert report["layout"] == EXPECTED_LAYOUT[capability]
    assert report["in_place"] is True
    # Products in float32 of a [192, 256] int4 matrix with scales in [0.5, 1.5):
    # the kernel's own rounding only.
    assert report["matmul_error"] <= 1e-2
    assert report["dequantize_error"] <= 1e-5
    assert report["rows_error"] <= 1e-5


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("group", [32, 64, 128])
def test_the_rewrite_keeps_the_weights_and_their_bytes(dtype_name: str, group: int) -> None:
    lin, ref = mlx_linear(192, 512, dtype_name, group)
    assert lin.scales is not None and lin.biases is not None
    words_at, words_bytes = lin.weight.data_ptr(), lin.weight.nbytes
    scale_bytes = lin.scales.nbytes + lin.biases.nbytes
    converted = lin.for_cpu_int4()
    assert converted.int4 is not None
    # In place: the packed bytes are the MLX words' own storage, the same size.
    assert converted.weight.data_ptr() == words_at
    assert converted.weight.nbytes == words_bytes
    assert converted.int4.scale_zeros.nbytes == scale_bytes
    dense = converted.dense(InflightQueue(0, LaggingEvent))
    # The only difference from mx.dequantize: the zero point `bias + 8 * scale`
    # rounded once to the scales' dtype (half an ulp of it), then the usual rounding.
    eps = torch.finfo(getattr(torch, dtype_name)).eps
    bound = 2 * eps * float(ref.abs().max()) + eps * float(lin.biases.abs().max())
    assert float((dense.float() - ref.float()).abs().max()) <= bound


def test_embedding_rows_are_the_rows_of_the_whole_matrix() -> None:
    lin, _ref = mlx_linear(256, 256, "bfloat16")
    converted = lin.for_cpu_int4()
    # Rows on either side of each layout's lane boundaries (16, 32, 64).
    rows = torch.tensor([[0, 15, 16, 31], [32, 63, 64, 100], [255, 200, 1, 2]])
    queue = InflightQueue(0, LaggingEvent)
    got = converted.dense_rows(rows, queue)
    assert got.shape == (3, 4, 256)
    assert torch.equal(got, converted.dense(queue)[rows])


@pytest.mark.parametrize("rows", [1, 8, 9, 64])
def test_any_row_count_runs_without_a_weight_copy(rows: int) -> None:
    lin, _ref = mlx_linear(256, 512, "float16")
    converted = lin.for_cpu_int4()
    queue = InflightQueue(0, LaggingEvent)
    weights = converted.dense(InflightQueue(0, LaggingEvent)).float()
    x = torch.randn(1, rows, 512).to(torch.float16)
    expert = Linear(converted.weight, None, None, None, 4, 64, no_copy=True, int4=converted.int4)
    y = expert(x, queue)
    assert queue.open_bytes == rows * 256 * 2  # the output only: no [256, 512] copy
    assert torch.allclose(y.float(), x.float() @ weights.T, rtol=0, atol=0.02)


def test_stacked_experts_convert_and_run_one_by_one() -> None:
    a, _ = mlx_linear(128, 256, "bfloat16")
    b_words = a.weight.flip(0).contiguous()
    assert a.scales is not None and a.biases is not None
    stacked = Linear(
        torch.stack([a.weight, b_words]),
        torch.stack([a.scales, a.scales.flip(0)]),
        torch.stack([a.biases, a.biases.flip(0)]),
        None,
        4,
        64,
    ).for_cpu_int4()
    assert stacked.int4 is not None
    x = torch.randn(5, 256).to(torch.bfloat16)
    queue = InflightQueue(0, LaggingEvent)
    flipped = Linear(b_words, a.scales.flip(0), a.biases.flip(0), None, 4, 64).for_cpu_int4()
    expected = x.float() @ flipped.dense(queue).float().T
    got = stacked.expert(1)(x, queue)
    assert torch.allclose(got.float(), expected, rtol=0, atol=0.02)


@pytest.mark.parametrize(
    ("blocks", "bits", "group", "why"),
    [
        (1.5, 4, 64, "rows not a multiple of the layout's block"),
        (2, 8, 64, "8-bit"),
        (2, 2, 64, "2-bit"),
    ],
)
def test_modules_the_kernel_cannot_run_keep_mlx_layout(
    blocks: float, bits: int, group: int, why: str
) -> None:
    rows = int(blocks * block_rows())
    packed, scales, biases, _ref = quantized((rows, 256), "bfloat16", bits, group)
    lin = Linear(packed, scales, biases, None, bits, group)
    assert lin.for_cpu_int4() is lin, why


def test_a_loaded_4bit_model_runs_int4_modules_and_counts_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "intermediate_size": 256,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5,
        "vocab_size": 320,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "quantization": {"group_size": 64, "bits": 4},
    }
    folder = write_random_model(tmp_path / "m", config)
    resolved = resolve_source(ModelSource(folder=folder))
    stored = sum(t.nbytes for t in resolved.plan.tensors.values())
    tokens = torch.tensor([[1, 2, 3, 300, 64]])

    def logits(model: Any) -> Any:
        queue = InflightQueue(0, LaggingEvent)
        with torch.no_grad():
            return model.forward(tokens, model.new_cache(queue), queue, all_logits=True)

    model = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
    # Every 4-bit module has whole blocks of any layout (k_proj/v_proj have 64 rows;
    # the 320-token tied embedding has 5 blocks of 64, 10 of 32).
    assert all(lin.int4 is not None for lin in model.linears())
    assert model.weights_bytes == stored
    converted = logits(model)
    monkeypatch.setattr(weights, "cpu_int4", False)
    as_stored = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
    assert all(lin.int4 is None for lin in as_stored.linears())
    # The same model either way: the rewritten words and the pages given back around
    # them (tensor_reader.drop_released) left every other byte as it was.
    assert converted.shape == (1, 5, 320)
    assert float((converted.float() - logits(as_stored).float()).abs().max()) <= 0.05
