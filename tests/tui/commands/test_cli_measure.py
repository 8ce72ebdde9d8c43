"""`vramscope measure` and `vramscope table` as a user runs them (real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.measurement.history import HistoryStore

ROOT = Path(__file__).resolve().parents[3]
FAST = ["--prompt-tokens", "8", "--gen-tokens", "2", "--warmup-tokens", "0", "--device", "cpu"]


def vramscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_measure_prints_estimate_and_peak_side_by_side(tiny_llama: Path) -> None:
    pytest.importorskip("torch")
    done = vramscope("measure", str(tiny_llama), *FAST, "--inflight-mb", "64")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    estimate = next(line for line in lines if line.startswith("Estimate:"))
    peak = next(line for line in lines if line.startswith("Measured peak:"))
    margin = next(line for line in lines if line.startswith("Margin:"))
    assert "at 10 tokens" in estimate  # P + G
    assert "bytes" in peak
    assert "covered" in margin
    assert "in-flight budget 64 MiB" in done.stdout
    assert "\r" not in done.stderr  # no progress bar when stderr is not a terminal
    assert len(HistoryStore.default().read().results) == 1


def test_measure_json_carries_the_margin(tiny_llama: Path) -> None:
    pytest.importorskip("torch")
    done = vramscope("measure", str(tiny_llama), *FAST, "--json", "--no-history")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    measured = doc["measured"]
    assert measured["estimate_bytes"] == doc["estimate_bytes"]
    assert doc["margin"]["bytes"] == doc["estimate_bytes"] - measured["peak_bytes"]
    assert doc["margin"]["covered"] is True
    assert measured["inflight_mib"] == 1024  # the default budget
    assert HistoryStore.default().read().results == []


def test_a_failed_measurement_is_one_line_and_exit_2(tiny_llama: Path) -> None:
    # The README's promise for errors: one line, exit 2 (1 is --check's verdict).
    done = vramscope("measure", "google/gemma-2-2b-it", *FAST)
    assert done.returncode == 2
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [
        "vramscope: error: measurement failed (not supported for measurement): model type "
        "'gemma2' is not supported for measurement (supported: llama, mistral, qwen2, qwen3, "
        "qwen3_moe); the estimate still works"
    ]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["measure", "no/such-model"], "no/such-model"),
        (["measure", "x", "--prompt-tokens", "0"], "--prompt-tokens"),
        (["measure", "x", "--device", "tpu"], "--device"),
        (["measure", "x", "--memory-cap", "lots"], "--memory-cap"),
        (["measure", "x", "--timeout", "-1"], "--timeout"),
        (["table", "x", "--contexts", "640,abc"], "--contexts"),
        (["table", "x", "--contexts", "100", "--gen-tokens", "128"], "leaves no prompt tokens"),
        (["table", "x", "--budgets", "-5"], "--budgets"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    args: list[str], words: str, tiny_llama: Path
) -> None:
    args = [str(tiny_llama) if a == "x" else a for a in args]
    done = vramscope(*args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert words in done.stderr
    assert "Traceback" not in done.stderr


def test_table_writes_the_estimate_against_peak_table(tiny_llama: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "results" / "table.md"
    out.parent.mkdir()  # --out never makes a missing folder (test_cli_messages.py)
    done = vramscope(
        "table",
        str(tiny_llama),
        "--contexts",
        "24",
        "--budgets",
        "16,0",
        "--gen-tokens",
        "4",
        "--warmup-tokens",
        "0",
        "--device",
        "cpu",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text == done.stdout
    rows = [line for line in text.splitlines() if line.startswith(f"| {tiny_llama} |")]
    assert len(rows) == 2
    assert rows[0].split("|")[2:5] == [" torch engine ", " 24 ", " 16 "]
    assert rows[1].split("|")[4] == " 0 (off) "
    assert rows[0].rstrip().endswith("| yes |")
    assert "the estimate covers 1 of 1 measured peaks" in text
    assert "smallest margin is" in text
    assert "ran with the bound off" in text
    assert "[2/2]" in done.stderr


def test_measure_check_exits_1_exactly_when_the_estimate_does_not_cover(tiny_llama: Path) -> None:
    # Budget 0 and no headroom factor: the estimate falls below this CPU peak; the
    # default workload is covered. The exit code follows the printed verdict.
    for extra in ([], ["--inflight-mb", "0"]):
        proc = vramscope(
            "measure", str(tiny_llama), "--device", "cpu", "--prompt-tokens", "32",
            "--gen-tokens", "4", "--json", "--check", "--no-history", *extra,
        )  # fmt: skip
        covered = json.loads(proc.stdout)["margin"]["covered"]
        assert proc.returncode == (0 if covered else 1), proc.stderr
