"""`table` and `calibrate` say the same of the same runs (issue #25, item 5): real torch
runs on the CPU, in child processes, measured by `vramscope table` into a history that
`vramscope calibrate` then fits.

A torch run on the CPU emulates MLX-ROCm's in-flight queue, so it stands in for MLX on
ROCm: both commands hold it against ROCm's formula with its budget, and both name its
peak for what it is, the process's resident memory over its baseline (never MLX's peak).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.calibration.fit import figures
from tests.installed import needs

# Real engines in child processes, started by `vramscope table` (a helper, which the
# source scan in tests/conftest.py does not see): tens of seconds.
pytestmark = [pytest.mark.slow, pytest.mark.child_process, needs("torch", "mlx_lm")]

ROOT = Path(__file__).resolve().parents[3]
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


def table_rows(markdown: str) -> list[tuple[int, int, bool]]:
    """(measured peak, estimate, covered) of every row of the table."""
    out = []
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 9 and cells[8] in ("yes", "NO"):
            out.append(
                (int(cells[4].replace(",", "")), int(cells[5].replace(",", "")), cells[8] == "yes")
            )
        elif len(cells) > 4 and cells[4].startswith("failed"):
            raise AssertionError(line)
    return out


@pytest.fixture(scope="module")
def torch_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Two tiny bf16 models measured by the torch engine on the CPU into one history, each
    at a budget of its own (256 and 1024 MiB: each row is held against the formula with
    its own budget), and the tables `vramscope table` printed. One run a model: calibrate
    needs two models, and each run is a torch child (2-3 s of processor time)."""
    from tests.hip_backend.mlx_models import LLAMA_CONFIG, write_mlx_model

    root = tmp_path_factory.mktemp("table-calibrate")
    folders = [
        write_mlx_model(
            root / "llama-bf16", {**LLAMA_CONFIG, "torch_dtype": "bfloat16"}, bits=None
        ),
        write_mlx_model(root / "qwen2-bf16", QWEN2_CONFIG, bits=None),
    ]
    state = root / "state"
    tables = []
    for folder, budget in zip(folders, ("256", "1024"), strict=True):
        done = vramscope(
            state, "table", str(folder), "--engine", "torch", "--device", "cpu",
            "--contexts", "160", "--budgets", budget, "--gen-tokens", "16",
            "--warmup-tokens", "4", "--quiet",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        tables.append(done.stdout)
    return state, "\n".join(tables)


def test_calibrate_holds_the_runs_against_the_formula_table_held_them_against(
    torch_history: tuple[Path, str],
) -> None:
    state, markdown = torch_history
    rows = table_rows(markdown)
    assert len(rows) == 2
    assert "Estimate: mlxcel's ROCm formula at the context with the row's budget." in markdown
    done = vramscope(state, "calibrate", "--json")
    assert done.returncode == 0, done.stderr
    (cal,) = json.loads(done.stdout)["calibrations"]
    assert (cal["engine"], cal["backend"], cal["measured_on"]) == ("torch", "rocm", "cpu")
    # mlxcel's estimate on the runs, as calibrate saw them: table's, row for row.
    peaks = [p for p, _, _ in rows]
    estimates = [e for _, e, _ in rows]
    expected = figures(estimates, peaks)
    assert cal["mlxcel"] == {
        "rows": expected.rows,
        "covered": expected.covered,
        "median_overshoot": expected.median_overshoot,
        "worst_overshoot": expected.worst_overshoot,
        "least_overshoot": expected.least_overshoot,
    }
    assert cal["mlxcel"]["covered"] == sum(covered for _, _, covered in rows) == 2


def test_both_name_the_torch_engine_s_figure_for_what_it_is(
    torch_history: tuple[Path, str],
) -> None:
    state, markdown = torch_history
    assert "peak: torch engine, RSS over baseline, emulating MLX-ROCm's in-flight queue" in markdown
    done = vramscope(state, "calibrate")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Calibrated (vramscope): torch on cpu ")
    assert lines[0].endswith(", held against ROCm's formula, 2 runs of 2 models")
    assert (
        lines[1]
        == "  Fitted to:     the torch engine's peak resident memory (RSS) over its baseline"
    )
    assert "MLX" not in done.stdout
    # table covered every run; calibrate's mlxcel line says the same
    assert "    mlxcel:      2 of 2 covered; overshoot median +" in done.stdout
    # two models: fitted, with one warning line that it could not be cross-validated
    (warning,) = done.stderr.splitlines()
    assert "not cross-validated: runs of 2 models" in warning
