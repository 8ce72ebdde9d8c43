"""Per-backend behaviour of the torch engine: the in-flight queue is MLX-ROCm's where
MLX has one (ROCm; the CPU stands in for it) or when asked, and nothing is held on
CUDA; the estimate a peak is held against is the same backend's. And a torch build
without kernels for the GPU is a typed `unsupported_device` failure naming the arch."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from core.backend import Backend
from core.measurement.protocol import MeasureFailed, decode_event, encode_event
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasuredPeak
from core.measurement.run import peak_or_failure
from hip_backend import measure, prepare
from hip_backend.torch_engine.device import DeviceInfo, unsupported_device
from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent, emulates_rocm

ROCM = DeviceInfo(
    Backend.ROCM, "AMD Radeon 8060S", "gfx1151", "2.13.0+rocm7.1", "7.1.25424", bus_id=None
)
CUDA = DeviceInfo(Backend.CUDA, "NVIDIA H200", "sm_90", "2.13.0+cu128", "12.8")

# As torch's HIP and CUDA builds print them (first lines of the RuntimeError text).
RECORDED_ERRORS = [
    (
        ROCM,
        "HIP error: invalid device function\nHIP kernel errors might be asynchronously "
        "reported at some other API call, so the stacktrace below might be incorrect.\n"
        "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
    ),
    (ROCM, "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"),
    (
        CUDA,
        "CUDA error: no kernel image is available for execution on the device\nCUDA "
        "kernel errors might be asynchronously reported at some other API call",
    ),
]


@pytest.mark.parametrize(("info", "text"), RECORDED_ERRORS)
def test_no_kernels_for_the_gpu_is_a_typed_failure_naming_the_arch(
    info: DeviceInfo, text: str
) -> None:
    typed = unsupported_device(RuntimeError(text), info)
    assert typed is not None
    failure = typed.failure()
    assert failure.kind is FailureKind.UNSUPPORTED_DEVICE
    assert info.arch is not None
    assert info.arch in failure.message
    assert "\n" not in failure.message
    # It crosses the child's protocol as its own kind.
    event = decode_event(encode_event(MeasureFailed(failure)))
    assert isinstance(event, MeasureFailed)
    assert event.failure.kind is FailureKind.UNSUPPORTED_DEVICE


def test_other_runtime_errors_stay_untyped() -> None:
    assert unsupported_device(RuntimeError("CUDA error: an illegal memory access"), CUDA) is None


@pytest.mark.parametrize(
    ("emulate", "device", "expected"),
    [
        ("auto", "rocm", True),
        ("auto", "cpu", True),
        ("auto", "cuda", False),
        ("rocm", "cuda", True),
        ("none", "rocm", False),
    ],
)
def test_where_the_rocm_queue_is_emulated(emulate: str, device: str, expected: bool) -> None:
    assert emulates_rocm(emulate, Backend(device)) is expected


class Buffer:
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def test_without_emulation_the_queue_holds_nothing_and_never_waits() -> None:
    queue = InflightQueue(16 << 20, LaggingEvent, emulate=False)
    first = Buffer(64 << 20)
    watch = weakref.ref(first)
    queue.op(first)
    del first
    gc.collect()
    assert watch() is None
    assert (queue.stats.ops, queue.stats.commits, queue.stats.max_held_bytes) == (1, 0, 0)


def test_unknown_emulation_is_refused() -> None:
    with pytest.raises(ValueError, match="emulate"):
        MeasureRequest("m", emulate="cuda")


@pytest.mark.slow
def test_a_run_without_the_queue_is_held_against_its_own_backends_estimate(
    tiny_llama: Path,
) -> None:
    """A CPU run with `--emulate none` holds nothing and is compared with the CPU
    formula (no in-flight term); the default CPU run is compared with ROCm's."""
    request = MeasureRequest(
        str(tiny_llama),
        prompt_tokens=32,
        gen_tokens=4,
        warmup_tokens=1,
        inflight=256,
        device="cpu",
        emulate="none",
    )
    outcome = peak_or_failure(measure(request, record_history=False))
    assert isinstance(outcome, MeasuredPeak), outcome
    assert outcome.extra["inflight_emulation"] == "none"
    assert outcome.extra["attention"] == "mlx-fallback"  # what MLX runs on the CPU
    assert outcome.extra["inflight_max_held_bytes"] == 0
    assert outcome.extra["inflight_commits"] == 0
    assert outcome.inflight_mib == 0
    prepared = prepare(request)
    cpu_estimate = prepared.estimate_for("cpu", rocm_queue=False)
    rocm_estimate = prepared.estimate_for("cpu")
    assert outcome.estimate_bytes == cpu_estimate.total_bytes
    assert rocm_estimate.total_bytes - cpu_estimate.total_bytes >= 256 << 20  # the term
    assert cpu_estimate.backend_inflight_bytes == 0
    assert rocm_estimate.backend_inflight_bytes == 256 << 20


def test_the_fused_bf16_scale_path_makes_no_weight_copies(tmp_path: Path) -> None:
    """MLX-ROCm's fused BF16-scale kernel, modelled: once switched on, a prefill chunk
    holds only activations; the same logits within rounding."""
    import torch

    from hip_backend.model.random_weights import write_random_model
    from hip_backend.model.source import ModelSource, resolve_source
    from hip_backend.torch_engine.loader import build_model

    config = {
        "model_type": "llama",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "intermediate_size": 512,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5,
        "vocab_size": 512,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "quantization": {"group_size": 64, "bits": 4},
    }
    resolved = resolve_source(ModelSource(folder=write_random_model(tmp_path / "m", config)))
    held = []
    logits = []
    for fuse in (False, True):
        model = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
        switched = model.fuse_bf16_scales() if fuse else 0
        queue = InflightQueue(0, LaggingEvent)
        with torch.no_grad():
            tokens = torch.arange(16)[None]
            logits.append(model.forward(tokens, model.new_cache(queue), queue).float())
        held.append(queue.stats.max_held_bytes)
        if fuse:
            assert switched == 2 * 7 + 2  # every projection, the embedding and the head
    # bf16 bytes of every layer's dequantized weights (q, o 256x256; k, v 128x256; the
    # MLP 3 x 512x256); the head runs on the last position only, without a copy anyway.
    copies = 2 * 2 * (2 * 256 * 256 + 2 * 128 * 256 + 3 * 512 * 256)
    assert held[0] - held[1] == copies
    assert float((logits[0] - logits[1]).abs().max()) <= 0.05


def vramscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=300,
    )


@pytest.mark.parametrize("flag", [["--attention", "torch-sdpa"], ["--fuse-bf16", "on"]])
def test_torch_kernel_flags_are_refused_for_the_mlx_engine(
    tiny_llama: Path, flag: list[str]
) -> None:
    done = vramscope("measure", str(tiny_llama), "--engine", "mlx", *flag)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert flag[0] in line and "torch engine" in line


@pytest.mark.slow
def test_the_chosen_kernels_are_run_and_named(tiny_llama: Path) -> None:
    """`--attention torch-sdpa --fuse-bf16 on` on the CPU: the JSON says what ran. (The
    text naming the attention beside the engine is read from the module-scoped runs of
    tests/tui/commands/test_cli_measure.py: a run of its own here was one torch child
    more.)"""
    args = ["measure", str(tiny_llama), "--device", "cpu", "--prompt-tokens", "16"]
    args += ["--gen-tokens", "2", "--warmup-tokens", "1", "--no-history"]
    done = vramscope(*args, "--attention", "torch-sdpa", "--fuse-bf16", "on", "--json")
    assert done.returncode == 0, done.stderr
    extra = json.loads(done.stdout)["measured"]["extra"]
    assert extra["attention"] == "torch-sdpa"
    assert extra["fused_bf16_modules"] == 0  # tiny_llama's scales are F16: nothing to fuse
    assert set(extra["sdpa_backend"]) == {"first_chunk", "later_chunk", "decode"}
    assert "attention: torch's fused SDPA (no score matrix)" in done.stderr
