"""The `mlx` engine end to end: real child processes running mlx-lm on the CPU.

Each model is written by mlx-lm inside the test, measured through the launcher (or
the `vramscope` command) and, at the same time in a process apart from the engine's,
by an independent mlx-lm run of the same workload (the module's runs in one process,
each on its own: tests/hip_backend/mlx_engine/mlx_peak_reference.py). The engine's peak
must lie within 10% of that run's and never below the bytes of the loaded weights.
Workloads are short: MLX's CPU 4-bit kernels are slow.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.backend import Backend
from core.estimate.estimate import KvCacheMode
from core.measurement.engine import Engine
from core.measurement.history import HistoryStore
from core.measurement.protocol import MeasureNotice
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasuredPeak
from core.measurement.run import peak_or_failure
from hip_backend import measure, prepare, start_run
from tests.hip_backend.mlx_models import (
    DEEPSEEK_V2_CONFIG,
    GEMMA2_CONFIG,
    LLAMA_CONFIG,
    QWEN3_MOE_CONFIG,
    QWEN3_NEXT_CONFIG,
    write_mlx_model,
)
from tests.hip_backend.test_failures import Recorder, failure_of
from tests.installed import need
from tests.used_home import user_env

pytestmark = pytest.mark.usefixtures("mlx_available")

ROOT = Path(__file__).resolve().parents[3]
PROMPT, GEN, WARMUP = 16, 4, 4
TOLERANCE = 0.10
TOLERANCE_BY_MODEL = {"qwen3_next-4bit": 0.15}
"""The hybrid model's 1.3 MB peak moved with MLX's buffer cache: 1.2% from mlx-lm's own
run alone, 10.7% (146 KB under) once in a full suite on 2 loaded cores."""
MIB = 1 << 20

MODELS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # name: (config, how write_mlx_model quantizes it)
    "llama-bf16": ({**LLAMA_CONFIG, "torch_dtype": "bfloat16"}, {"bits": None}),
    "llama-4bit": (LLAMA_CONFIG, {"bits": 4}),
    "gemma2-f16": (GEMMA2_CONFIG, {"bits": None}),
    "qwen3_moe-4bit": (QWEN3_MOE_CONFIG, {"bits": 4}),  # 8-bit router: mixed per-layer bits
    "deepseek_v2-4bit": (DEEPSEEK_V2_CONFIG, {"bits": 4}),  # multi-head latent attention
    "llama-mxfp4": (
        {**LLAMA_CONFIG, "torch_dtype": "bfloat16"},
        {"bits": 4, "group_size": 32, "mode": "mxfp4"},
    ),
    "qwen3_moe-nvfp4": (QWEN3_MOE_CONFIG, {"bits": 4, "group_size": 16, "mode": "nvfp4"}),
    "qwen3_next-4bit": (QWEN3_NEXT_CONFIG, {"bits": 4}),  # hybrid: gated delta + attention
}


@pytest.fixture(scope="module")
def mlx_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every model of MODELS, written once by mlx-lm."""
    root = tmp_path_factory.mktemp("mlx-engine-models")
    for name, (config, quantization) in MODELS.items():
        write_mlx_model(root / name, config, **quantization)
    return root


@dataclass(frozen=True)
class Reference:
    peak_bytes: int
    weights_bytes: int


REFERENCE_RUNS: list[tuple[str, int | None]] = [
    *((name, None) for name in MODELS),
    ("qwen3_moe-4bit", 8),  # mlx-lm's quantized KV cache
]
"""Every (model, KV bits) a test here holds the engine against."""


class References:
    """mlx-lm alone, every run of REFERENCE_RUNS in one process of its own
    (tests/hip_backend/mlx_engine/mlx_peak_reference.py: each run's peak on its own, no
    earlier run's buffers held), started with the module's first test that needs it, so
    that it runs beside the engines' children, and read when a test first asks for a run.
    One process, not one a run: mlx-lm's import took 1.2 s of processor time in each of 9.
    """

    def __init__(self, root: Path, home: Path) -> None:
        self._specs = {
            (name, bits): f"{root / name}@{bits}" if bits else str(root / name)
            for name, bits in REFERENCE_RUNS
        }
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.hip_backend.mlx_engine.mlx_peak_reference",
                *map(str, (PROMPT, GEN, WARMUP)),
                *self._specs.values(),
            ],
            cwd=ROOT,
            env=user_env(home, HF_HUB_OFFLINE="1"),  # set up before any test's own home
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._read: dict[str, Reference] | None = None

    def of(self, name: str, kv_bits: int | None = None) -> Reference:
        if self._read is None:
            out, err = self.process.communicate(timeout=600)
            assert self.process.returncode == 0, err
            lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            self._read = {
                line["run"]: Reference(int(line["peak_bytes"]), int(line["weights_bytes"]))
                for line in lines
            }
        return self._read[self._specs[(name, kv_bits)]]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


@pytest.fixture(scope="module")
def references(
    mlx_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[References]:
    runs = References(mlx_model_dir, tmp_path_factory.mktemp("references-home"))
    yield runs
    runs.stop()


def request(folder: Path | str, **kw: Any) -> MeasureRequest:
    base: dict[str, Any] = {
        "prompt_tokens": PROMPT,
        "gen_tokens": GEN,
        "warmup_tokens": WARMUP,
        "device": "cpu",
        "engine": "mlx",
    }
    return MeasureRequest(str(folder), **{**base, **kw})


def vramscope(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=env,
    )


WORKLOAD_FLAGS = (
    f"--prompt-tokens={PROMPT}",
    f"--gen-tokens={GEN}",
    f"--warmup-tokens={WARMUP}",
    "--device=cpu",
    "--engine=mlx",
)


def measured_via_cli_json(folder: Path) -> MeasuredPeak:
    done = vramscope("measure", str(folder), *WORKLOAD_FLAGS, "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["engine"] == "mlx"
    assert document["counted"] == "MLX peak (mx.get_peak_memory), cpu"
    assert document["estimate_backend"] == "cpu"
    assert document["estimate_bytes"] == document["measured"]["estimate_bytes"]
    return MeasuredPeak.from_dict(document["measured"])


def measured_via_cli_text(folder: Path) -> MeasuredPeak:
    done = vramscope("measure", str(folder), *WORKLOAD_FLAGS)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "Engine:         MLX (mlx-lm)" in lines
    assert any(line.startswith("Device:         cpu ") and "mlx-lm 0.32" in line for line in lines)
    assert "no in-flight queue (MLX on cpu)" in done.stdout
    assert "(CPU formula)" in done.stdout
    assert "                MLX peak (mx.get_peak_memory), cpu" in lines
    (record,) = HistoryStore.default().read().results  # the command recorded it
    (shown,) = [line for line in lines if line.startswith("Measured peak:  ")]
    assert shown.endswith(f"{record.peak_bytes} bytes)") or shown.endswith(
        f" {record.peak_bytes} bytes"
    )
    return record


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_the_mlx_peak_is_mlx_lm_s_own(
    name: str, mlx_model_dir: Path, references: References
) -> None:
    folder = mlx_model_dir / name
    if name == "llama-bf16":
        peak = measured_via_cli_json(folder)
    elif name == "gemma2-f16":
        peak = measured_via_cli_text(folder)
    else:
        outcome = peak_or_failure(measure(request(folder)))
        assert isinstance(outcome, MeasuredPeak), outcome
        peak = outcome
        assert HistoryStore.default().read().results == [peak]
    ref = references.of(name)

    assert peak.engine is Engine.MLX
    assert peak.peak_kind == "MLX peak (mx.get_peak_memory), cpu"
    assert peak.device_kind is Backend.CPU
    assert peak.mlx_version and peak.mlx_lm_version
    assert not peak.synthetic_weights
    assert peak.weights_bytes == ref.weights_bytes
    assert peak.peak_bytes >= ref.weights_bytes
    tolerance = TOLERANCE_BY_MODEL.get(name, TOLERANCE)
    assert abs(peak.peak_bytes - ref.peak_bytes) <= tolerance * ref.peak_bytes, (peak, ref)
    assert peak.active_bytes is not None and peak.active_bytes >= ref.weights_bytes
    assert peak.decode_tokens_per_s > 0 and peak.prefill_tokens_per_s > 0
    # Held against the CPU formula: the ROCm one (the torch engine's) adds the budget.
    rocm = prepare(request(folder, engine="torch", inflight=64)).estimate.total_bytes
    assert peak.estimate_bytes == rocm - 64 * MIB


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "shape_source"),
    [("qwen3_moe-4bit", "headers"), ("llama-bf16", "config")],
)
def test_models_without_weights_are_measured_with_random_arrays_of_their_shapes(
    name: str, shape_source: str, mlx_model_dir: Path, references: References, tmp_path: Path
) -> None:
    real = mlx_model_dir / name
    if shape_source == "headers":
        req = request(real, synthetic=True)  # names, dtypes and shapes from the headers
    else:
        bare = tmp_path / f"{name}-config-only"
        bare.mkdir()
        shutil.copy(real / "config.json", bare / "config.json")
        req = request(bare)  # what mlx_lm.convert writes for the config
    rec = Recorder()
    handle = start_run(req, rec, record_history=False)
    peak = peak_or_failure(handle.wait(300))
    ref = references.of(name)
    assert isinstance(peak, MeasuredPeak), peak
    assert peak.synthetic_weights
    assert any(
        isinstance(e, MeasureNotice) and e.message.startswith("synthetic weights")
        for e in rec.events
    )
    assert peak.weights_bytes == ref.weights_bytes
    tolerance = TOLERANCE_BY_MODEL.get(name, TOLERANCE)
    assert abs(peak.peak_bytes - ref.peak_bytes) <= tolerance * ref.peak_bytes, (peak, ref)


def test_without_mlx_the_engine_is_a_one_line_error(tiny_llama: Path, tmp_path: Path) -> None:
    # mlx hidden from the interpreter (a sitecustomize ahead of site-packages): it looks
    # exactly like one without mlx installed. (A package named mlx whose import raises
    # is installed but failing to load: tests/tui/commands/test_engine_not_installed.py.)
    shim = tmp_path / "no-mlx"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text("import sys\nsys.modules['mlx'] = None\n")
    env = {**os.environ, "PYTHONPATH": str(shim)}
    done = vramscope("measure", str(tiny_llama), *WORKLOAD_FLAGS, env=env)
    assert done.returncode == 2  # a failed measurement
    assert done.stdout == ""
    # The one error line, before any child starts (no phase lines).
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("vramscope: error: measurement failed (mlx is not installed): ")
    assert "pip install 'vramscope[mlx]'" in line


def test_a_family_mlx_lm_cannot_load_is_unsupported_with_its_reason(
    tiny_llama: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "made-up"
    shutil.copytree(tiny_llama, folder)
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "vramscope_made_up"
    (folder / "config.json").write_text(json.dumps(config))
    failure = failure_of(measure(request(folder)), FailureKind.UNSUPPORTED_MODEL)
    assert "Model type vramscope_made_up not supported" in failure.message
    assert HistoryStore.default().read().results == []


def test_weights_over_the_memory_cap_fail_before_the_load(tiny_llama: Path) -> None:
    failure = failure_of(
        measure(request(tiny_llama, host_memory_cap_bytes=100_000)), FailureKind.OUT_OF_MEMORY
    )
    assert "over the memory cap of 100,000 bytes" in failure.message


@pytest.mark.slow
def test_a_run_past_the_memory_cap_fails_as_out_of_memory(mlx_model_dir: Path) -> None:
    folder = mlx_model_dir / "llama-bf16"  # 2,755,072 bytes of weights, ~3.2 MB peak
    capped = request(folder, host_memory_cap_bytes=2_800_000, prompt_tokens=256)
    failure = failure_of(measure(capped), FailureKind.OUT_OF_MEMORY)
    assert "over the memory cap of 2,800,000 bytes" in failure.message


def _long(tiny_llama: Path, **kw: Any) -> MeasureRequest:
    return request(tiny_llama, gen_tokens=100_000, **kw)


def test_cancelling_an_mlx_run_kills_its_child(tiny_llama: Path) -> None:
    rec = Recorder()
    handle = start_run(_long(tiny_llama), rec, record_history=False)
    assert rec.progressed.wait(120)
    pid = handle.pid
    handle.cancel()
    failure_of(handle.wait(60), FailureKind.CANCELLED)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # type: ignore[arg-type]
    assert len(rec.terminal) == 1


def test_a_killed_mlx_child(tiny_llama: Path) -> None:
    rec = Recorder()
    handle = start_run(_long(tiny_llama), rec, record_history=False)
    assert rec.progressed.wait(120)
    assert handle.pid is not None
    os.kill(handle.pid, signal.SIGKILL)
    failure = failure_of(handle.wait(60), FailureKind.KILLED)
    assert "SIGKILL" in failure.message
    assert len(rec.terminal) == 1


def test_an_mlx_run_past_its_time_limit(tiny_llama: Path) -> None:
    outcome = peak_or_failure(measure(_long(tiny_llama, timeout_s=0.5), record_history=False))
    assert "0.5 s" in failure_of(outcome, FailureKind.TIMEOUT).message


@pytest.mark.slow
def test_table_puts_both_engines_beside_the_estimate(mlx_model_dir: Path, tmp_path: Path) -> None:
    need("torch")
    folder = mlx_model_dir / "llama-bf16"
    out = tmp_path / "both.md"
    done = vramscope(
        "table",
        str(folder),
        "--engine",
        "mlx,torch",
        "--contexts",
        str(PROMPT + GEN),
        "--budgets",
        "16",
        f"--gen-tokens={GEN}",
        f"--warmup-tokens={WARMUP}",
        "--device=cpu",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith(f"| {folder} |")]
    main_rows = [r for r in rows if r[1].strip() in ("MLX (mlx-lm)", "torch engine")]
    assert [r[1].strip() for r in main_rows] == ["MLX (mlx-lm)", "torch engine"]
    assert main_rows[0][3].strip() == "n/a (no queue)"
    assert main_rows[1][3].strip() == "16"
    mlx_peak, torch_peak = (int(r[4].strip().replace(",", "")) for r in main_rows)
    (side,) = [r for r in rows if r[1].strip() == str(PROMPT + GEN)]
    assert int(side[3].strip().replace(",", "")) == torch_peak
    assert int(side[4].strip().replace(",", "")) == mlx_peak
    assert side[6].strip() == f"{torch_peak / mlx_peak:.2f}x"
    assert "### Engines side by side" in text
    assert "MLX peak (mx.get_peak_memory), cpu" in text
    assert "emulating MLX-ROCm's in-flight queue" in text
    engines = [r.engine for r in HistoryStore.default().read().results]
    assert [e.value for e in engines] == ["mlx", "torch"]


def test_mlx_variables_reach_the_child_unchanged(
    tiny_llama: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "env.txt"
    python = tmp_path / "python-env"
    python.write_text(f'#!/bin/sh\nenv | grep ^MLX_ | sort > "{seen}"\nexit 3\n')
    python.chmod(0o755)
    monkeypatch.setenv("MLX_ROCM_MAX_INFLIGHT_MB", "not a number")
    monkeypatch.setenv("MLX_METAL_FAST_SYNCH", "1")
    failure_of(measure(request(tiny_llama), python=str(python)), FailureKind.INTERNAL)
    assert seen.read_text().splitlines() == [
        "MLX_METAL_FAST_SYNCH=1",
        "MLX_ROCM_MAX_INFLIGHT_MB=not a number",
    ]
    # An explicit budget is the one MLX's ROCm backend runs with, as the estimate does.
    failure_of(
        measure(request(tiny_llama, inflight="256"), python=str(python)), FailureKind.INTERNAL
    )
    assert "MLX_ROCM_MAX_INFLIGHT_MB=256" in seen.read_text().splitlines()


@pytest.mark.slow
def test_an_int8_kv_cache_is_mlx_lm_s_quantized_cache(
    mlx_model_dir: Path, references: References
) -> None:
    folder = mlx_model_dir / "qwen3_moe-4bit"
    peak = peak_or_failure(measure(request(folder, kv_int8=True), record_history=False))
    ref = references.of("qwen3_moe-4bit", kv_bits=8)
    assert isinstance(peak, MeasuredPeak), peak
    assert peak.kv_cache_mode is KvCacheMode.INT8
    assert abs(peak.peak_bytes - ref.peak_bytes) <= TOLERANCE * ref.peak_bytes, (peak, ref)
    int8 = prepare(request(folder, kv_int8=True)).estimate
    fp16 = prepare(request(folder)).estimate
    assert peak.estimate_bytes == int8.total_bytes
    assert int8.kv_bytes < fp16.kv_bytes


def test_an_int8_kv_cache_needs_the_mlx_engine(tiny_llama: Path) -> None:
    done = vramscope("measure", str(tiny_llama), "--kv-cache-mode", "int8", "--engine", "torch")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "--kv-cache-mode" in line and "--engine mlx" in line


def test_an_mlx_peak_is_held_against_the_backend_it_ran_on(tiny_llama: Path) -> None:
    prepared = prepare(request(tiny_llama, device="cpu", inflight=256))
    cpu = prepared.estimate.total_bytes
    assert prepared.estimate_for("cpu").total_bytes == cpu
    assert prepared.estimate_for("metal").total_bytes == cpu
    assert prepared.estimate_for("cuda").total_bytes == cpu
    assert prepared.estimate_for("rocm").total_bytes == cpu + 256 * MIB  # the queue's term
    torch_run = prepare(request(tiny_llama, engine="torch", inflight=256))
    assert torch_run.estimate.total_bytes == cpu + 256 * MIB


def test_a_gpu_this_mlx_build_lacks_is_no_device(tiny_llama: Path) -> None:
    import mlx.core as mx

    if mx.is_available(mx.gpu):
        pytest.skip("MLX has a GPU here")
    failure = failure_of(measure(request(tiny_llama, device="cuda")), FailureKind.NO_DEVICE)
    assert "mlx-cuda-12 or mlx-cuda-13" in failure.message
