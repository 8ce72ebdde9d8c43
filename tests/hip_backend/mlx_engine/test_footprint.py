"""What an MLX run holds beside MLX's peak (issue #21, item 5), on real mlx-lm runs on
the CPU: MLX's peak, its sampled active + cache peak and the child's VmHWM, their order,
their trip through the history and `measure --json`, and `calibrate --target` on them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.backend import Backend
from core.measurement.history import HISTORY_FILE, SCHEMA_VERSION, HistoryStore, encode_record
from core.measurement.request import MeasureRequest
from core.measurement.result import MeasuredPeak
from core.measurement.run import peak_or_failure
from hip_backend import measure
from tests.hip_backend.mlx_models import GEMMA2_CONFIG, LLAMA_CONFIG, write_mlx_model
from tests.used_home import user_env

pytestmark = pytest.mark.usefixtures("mlx_available")

ROOT = Path(__file__).resolve().parents[3]
PROMPT, GEN, WARMUP = 520, 4, 4
"""520 prompt tokens: two prefill chunks, so mlx-lm clears MLX's cache between them."""
NEW_FIELDS = ("active_plus_cache_peak_bytes", "os_peak_bytes", "os_peak_source")


def vramscope(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command, in the test's own home, or in `home` with nothing else of this
    process's environment (a module's fixture is set up before the test's own home)."""
    env = None if home is None else user_env(home, HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=env,
    )


def request(folder: Path) -> MeasureRequest:
    return MeasureRequest(
        str(folder),
        prompt_tokens=PROMPT,
        gen_tokens=GEN,
        warmup_tokens=WARMUP,
        device="cpu",
        engine="mlx",
    )


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three models written by mlx-lm: a bf16 llama, a 4-bit llama of half its width
    with bf16 scales and an f16 gemma-2. MLX's CPU 4-bit matmul is slow, in f16 most
    (0.03 G multiply-adds a second here, bf16 0.13, f32 1.2): 520 tokens of the
    full-width f16 one took 12 s of processor time, of the narrow f16 one 5 s."""
    root = tmp_path_factory.mktemp("footprint-models")
    narrow = {
        **LLAMA_CONFIG,
        "hidden_size": 128,
        "intermediate_size": 256,
        "torch_dtype": "bfloat16",
    }
    return {
        "llama-bf16": write_mlx_model(
            root / "llama-bf16", {**LLAMA_CONFIG, "torch_dtype": "bfloat16"}, bits=None
        ),
        "llama-4bit": write_mlx_model(root / "llama-4bit", narrow, bits=4),
        "gemma2-f16": write_mlx_model(root / "gemma2-f16", GEMMA2_CONFIG, bits=None),
    }


@pytest.fixture(scope="module")
def cli_run(
    tmp_path_factory: pytest.TempPathFactory, models: dict[str, Path]
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`measure --json` of the bf16 llama, once, and the history it wrote: the first of
    `three_runs` too."""
    home = tmp_path_factory.mktemp("footprint-home")
    done = vramscope(
        "measure",
        str(models["llama-bf16"]),
        f"--prompt-tokens={PROMPT}",
        f"--gen-tokens={GEN}",
        f"--warmup-tokens={WARMUP}",
        "--device=cpu",
        "--engine=mlx",
        "--json",
        home=home,
    )
    return done, home / ".local" / "state" / "vramscope" / HISTORY_FILE


@pytest.fixture(scope="module")
def three_runs(
    models: dict[str, Path], cli_run: tuple[subprocess.CompletedProcess[str], Path]
) -> list[MeasuredPeak]:
    """The three models measured once each by the real mlx engine: the bf16 llama
    through the command (`cli_run`), the others kept out of any history."""
    done, _ = cli_run
    assert done.returncode == 0, done.stderr
    out = [MeasuredPeak.from_dict(json.loads(done.stdout)["measured"])]
    for name in ("llama-4bit", "gemma2-f16"):
        outcome = peak_or_failure(measure(request(models[name]), record_history=False))
        assert isinstance(outcome, MeasuredPeak), outcome
        out.append(outcome)
    return out


def test_a_run_records_mlx_s_peak_its_active_plus_cache_and_the_os_peak(
    cli_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, history = cli_run
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout)["measured"]
    peak, held, os_peak = (
        measured["peak_bytes"],
        measured["active_plus_cache_peak_bytes"],
        measured["os_peak_bytes"],
    )
    assert measured["os_peak_source"].startswith("VmHWM (/proc/self/status)")
    # Checked on these runs, not assumed: MLX's cache only grows between mlx-lm's clears
    # and is sampled before each, so active + cache is at least MLX's active peak; MLX's
    # CPU buffers are this process's memory, so the kernel's high-water mark is above both.
    assert os_peak >= held >= peak >= measured["weights_bytes"] > 0
    assert held >= measured["active_bytes"] + measured["cache_bytes"]
    # The record the command wrote is the JSON's, the new fields included.
    (record,) = HistoryStore(history).read().results
    assert record == MeasuredPeak.from_dict(measured)
    assert (record.active_plus_cache_peak_bytes, record.os_peak_bytes) == (held, os_peak)


def test_the_text_report_names_each_figure(models: dict[str, Path]) -> None:
    done = vramscope(
        "measure", str(models["llama-bf16"]), "--prompt-tokens=16", "--gen-tokens=4",
        "--device=cpu", "--engine=mlx",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (record,) = HistoryStore.default().read().results
    lines = done.stdout.splitlines()
    assert any(
        line.startswith("Active + cache: ")
        and f"({record.active_plus_cache_peak_bytes} bytes)" in line
        and "freed-buffer cache" in line
        for line in lines
    ), lines
    assert any(
        line.startswith("OS peak:        ")
        and f"({record.os_peak_bytes} bytes)" in line
        and "VmHWM" in line
        for line in lines
    ), lines


def test_old_records_without_the_new_figures_still_read(
    three_runs: list[MeasuredPeak], state_home: Path
) -> None:
    new = three_runs[0]
    old = {k: v for k, v in new.to_dict().items() if k not in NEW_FIELDS}
    path = state_home / "vramscope" / HISTORY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"schema": SCHEMA_VERSION, "kind": "measurement", "result": old}) + "\n"
    path.write_bytes(line.encode() + encode_record(new))
    read = HistoryStore.default().read()
    assert not read.warnings
    first, second = read.results
    assert (first.active_plus_cache_peak_bytes, first.os_peak_bytes) == (None, None)
    assert first.peak_bytes == new.peak_bytes
    assert second == new


def _history(peaks: list[MeasuredPeak]) -> None:
    store = HistoryStore.default()
    for p in peaks:
        store.append(p)


def _fit(target: str) -> tuple[dict[str, Any], str]:
    done = vramscope("calibrate", "--target", target, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["target"] == target
    (cal,) = doc["calibrations"]
    return cal, done.stderr


def test_calibrate_fits_the_figure_its_target_names(
    three_runs: list[MeasuredPeak], state_home: Path
) -> None:
    lacking = MeasuredPeak.from_dict(
        {k: v for k, v in three_runs[1].to_dict().items() if k not in NEW_FIELDS}
    )
    _history([*three_runs, lacking])
    default, warned = _fit("peak")
    assert default["target"] == "peak" and default["runs"] == 4  # the old run counts
    assert default["figure"] == "MLX's peak (mx.get_peak_memory)"
    assert warned == ""
    held, warned = _fit("active_plus_cache")
    assert held["target"] == "active_plus_cache" and held["runs"] == 3
    assert "left out 1 run(s) that did not record MLX's active + cache peak" in warned
    os_fit, _ = _fit("os_peak")
    assert os_fit["target"] == "os_peak" and os_fit["runs"] == 3
    # The same terms, larger peaks run by run: each target's fixed part is larger.
    fixed = [c["form"]["fixed_bytes"] for c in (default, held, os_fit)]
    assert fixed[0] <= fixed[1] < fixed[2]
    # The last fit is the one saved; its report and inspect's line name what it fitted.
    text = vramscope("calibrate", "--target", "os_peak")
    assert "  Fitted to:     the process's OS peak (VmHWM on the CPU" in text.stdout
    shown = vramscope(
        "inspect", three_runs[0].model, "--max-tokens", str(PROMPT + GEN), "--backend", "cpu",
        "--calibrated",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    (line,) = [ln for ln in shown.stdout.splitlines() if "Calibrated (vramscope" in ln]
    assert "fitted to the process's OS peak" in line


def test_a_gpu_run_never_reports_the_host_s_vmhwm_as_its_os_peak() -> None:
    from hip_backend.mlx_engine.footprint import VM_HWM_SOURCE, Footprint

    cpu, rocm, cuda = Footprint(Backend.CPU), Footprint(Backend.ROCM), Footprint(Backend.CUDA)
    for f in (cpu, rocm, cuda):
        f.sample()  # real MLX counters; this process holds no amdgpu DRM client
        assert f.samples == 1 and f.held_peak >= 0
    cpu_peak = cpu.os_peak()
    assert cpu_peak is not None and cpu_peak.source == VM_HWM_SOURCE and cpu_peak.bytes > 0
    # On a GPU the figure is the device's memory or nothing, never the host's RSS.
    assert rocm.drm_peak is None and rocm.os_peak() is None
    assert cuda.os_peak() is None


def test_the_order_of_the_three_figures_holds_for_every_model(
    three_runs: list[MeasuredPeak],
) -> None:
    # A bf16 llama, a 4-bit llama and an f16 gemma-2: the same order each time.
    for run in three_runs:
        held, os_peak = run.active_plus_cache_peak_bytes, run.os_peak_bytes
        assert held is not None and os_peak is not None, run.model
        assert os_peak >= held >= run.peak_bytes, run
