"""A calibration covers shapes it was not fitted on (issue #25, item 5), with real MLX on
this CPU in child processes: `vramscope table --engine mlx` measures three tiny bf16/f16
models into one history (at 288 tokens) and a fourth, larger model into another (at 160
and 288 tokens); `vramscope calibrate` fits the three; `vramscope inspect --calibrated`
(on this CPU, which names itself) then estimates the fourth model's shapes, and each
estimate covers the peak MLX measured for it.

With the old fixed 1% margin the larger held-out model's runs were under their peaks
(by 5 to 8% on the machine this was written on): the fixed part fitted on smaller models
is too small for it. The margin is now what it takes to cover each training model's runs
from a fit on the other two, and that carries over to the held-out model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.measurement.history import HistoryStore
from tests.installed import needs

# Real engines in child processes, started by `vramscope table` (a helper, which the
# source scan in tests/conftest.py does not see): tens of seconds.
pytestmark = [pytest.mark.slow, pytest.mark.child_process, needs("mlx", "mlx_lm")]

ROOT = Path(__file__).resolve().parents[3]
CONTEXTS = (160, 288)
GEN = 16
QWEN2_CONFIG: dict[str, Any] = {
    "model_type": "qwen2",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-6,
    "vocab_size": 1024,
    "rope_theta": 1000000.0,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}


def vramscope(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )


def measure(state: Path, folders: list[Path], contexts: tuple[int, ...]) -> None:
    done = vramscope(
        state, "table", *map(str, folders), "--engine", "mlx", "--device", "cpu",
        "--contexts", ",".join(map(str, contexts)), "--budgets", "0",
        "--gen-tokens", str(GEN), "--warmup-tokens", "4", "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_the_calibrated_estimate_covers_a_model_it_was_not_fitted_on(tmp_path: Path) -> None:
    from tests.hip_backend.mlx_models import GEMMA2_CONFIG, LLAMA_CONFIG, write_mlx_model

    llama = {**LLAMA_CONFIG, "torch_dtype": "bfloat16"}
    training = [
        write_mlx_model(tmp_path / "llama-bf16", llama, bits=None),
        write_mlx_model(tmp_path / "qwen2-bf16", QWEN2_CONFIG, bits=None),
        write_mlx_model(tmp_path / "gemma2-f16", GEMMA2_CONFIG, bits=None),
    ]
    wide = {**llama, "hidden_size": 384, "intermediate_size": 1024, "num_hidden_layers": 3}
    held_out = write_mlx_model(tmp_path / "llama-wide-bf16", wide, bits=None)
    fitted_on, kept_apart = tmp_path / "fitted-on", tmp_path / "held-out"
    # The training runs at the larger context only (each is an MLX child, 2 s of
    # processor time): the held-out model's calibrated estimates came out the same, to
    # 0.1%, as with the training runs at both contexts (over its peaks by 26.7% at 160
    # tokens and 3.7% at 288 on the machine this was written on).
    measure(fitted_on, training, CONTEXTS[-1:])
    measure(kept_apart, [held_out], CONTEXTS)

    done = vramscope(fitted_on, "calibrate", "--json")
    assert done.returncode == 0, done.stderr
    (cal,) = json.loads(done.stdout)["calibrations"]
    assert (cal["engine"], cal["backend"], cal["runs"], len(cal["models"])) == ("mlx", "cpu", 3, 3)
    assert cal["figure"] == "MLX's peak (mx.get_peak_memory)"
    assert cal["form"]["margin"] == "leave-one-model-out"
    assert cal["cross_validated"]["folds"] == 3

    peaks = HistoryStore(kept_apart / "vramscope" / "measurements.jsonl").read().results
    assert sorted(p.context_tokens for p in peaks) == list(CONTEXTS)
    for peak in peaks:
        assert peak.device_name == cal["device"]  # this CPU, which inspect names itself
        shown = vramscope(
            fitted_on, "inspect", str(held_out), "--backend", "cpu",
            "--max-tokens", str(peak.context_tokens), "--calibrated", "--json",
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        calibrated = json.loads(shown.stdout)["calibrated"]
        assert calibrated is not None, shown.stderr
        assert calibrated["total_bytes"] >= peak.peak_bytes, (peak.context_tokens, calibrated)
