"""SIGTERM stops `vramscope measure` and `table` as Ctrl-C (SIGINT) does (#16): the
real command, signalled mid-run, stops its child itself (reaped, its group gone),
removes its scratch folder, says where the run stopped and exits 128 + the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hip_backend.test_dies_with_parent import descendants_of, left_after_grace, with_kill
from tests.installed import need
from tests.tui.commands.test_cli_measure import ROOT

LONG = ["--device", "cpu", "--prompt-tokens", "64", "--gen-tokens", "4096", "--no-history"]
"""A run signalled inside its decode: seconds of it on this CPU. A short prompt keeps the
engine's start small: an 8,192-token prompt (signalled inside its prefill, as before)
had the torch engine warm its attention at 2,048-token chunks before the baseline,
3 s of processor time a run."""


def start(args: list[str], tmpdir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )


def signal_when(process: subprocess.Popen[str], line_start: str, sig: int) -> list[str]:
    """Read stderr until a line starting `line_start`, send `sig`; every stderr line."""
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line.rstrip("\n"))
        if line.startswith(line_start):
            time.sleep(0.3)  # well inside the phase
            os.kill(process.pid, sig)
            break
    else:
        pytest.fail(f"the run never reached {line_start!r}: {seen}")
    seen += process.stderr.read().splitlines()
    return seen


@pytest.mark.parametrize(
    ("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_measure_stops_cleanly_on_the_signal(
    tiny_llama: Path, tmp_path: Path, sig: int, status: int
) -> None:
    need("torch")
    process = start(["measure", str(tiny_llama), *LONG], tmp_path)
    try:
        lines = signal_when(process, "vramscope: decode: started", sig)
        assert process.wait(30) == status
        # The command closed the run itself: its last phase stopped, no traceback.
        assert any(line.startswith("vramscope: decode: stopped after") for line in lines)
        assert not any("Traceback" in line for line in lines), lines
        assert process.stdout is not None and process.stdout.read() == ""
        assert left_after_grace(process.pid) == []
        assert list(tmp_path.iterdir()) == []
    finally:
        with_kill(process)


def test_table_stops_at_sigterm_without_running_the_rest(tiny_llama: Path, tmp_path: Path) -> None:
    need("torch")
    args = ["table", str(tiny_llama), "--contexts", "4160,4224", "--budgets", "64"]
    args += ["--gen-tokens", "4096", "--device", "cpu", "--no-history"]
    process = start(args, tmp_path)
    try:
        lines = signal_when(process, "vramscope: decode: started", signal.SIGTERM)
        assert process.wait(30) == 143
        assert not any(line.startswith("vramscope: [2/2]") for line in lines)
        assert process.stdout is not None and process.stdout.read() == ""  # no table
        assert left_after_grace(process.pid) == []
    finally:
        with_kill(process)


def test_a_two_rank_run_stops_at_sigterm_and_removes_its_scratch(
    tiny_llama: Path, tmp_path: Path
) -> None:
    args = ["measure", str(tiny_llama), "--engine", "mlx", "--tp", "2", *LONG]
    process = start(args, tmp_path)
    try:
        deadline = time.monotonic() + 120
        while len(descendants_of(process.pid)) < 2:  # both ranks started
            assert process.poll() is None, "the command ended before its ranks started"
            assert time.monotonic() < deadline, "the ranks never started"
            time.sleep(0.1)
        time.sleep(1.0)
        assert [p.name[:16] for p in tmp_path.iterdir()] == ["vramscope-ranks-"]
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(30) == 143
        assert list(tmp_path.iterdir()) == []  # removed by the command, at once
        assert process.stderr is not None and "Traceback" not in process.stderr.read()
        assert left_after_grace(process.pid) == []
    finally:
        with_kill(process)
