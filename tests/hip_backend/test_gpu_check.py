"""scripts/gpu_check.py's dry run: every section of the first-run GPU check runs on the
CPU with tiny shapes, in a real subprocess, and writes its report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.installed import needs

pytestmark = needs("torch")  # for the check's child

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gpu_check_dry_run_goes_through_every_section(tmp_path: Path) -> None:
    out = tmp_path / "check.md"
    done = subprocess.run(
        [sys.executable, "scripts/gpu_check.py", "--dry-run", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = out.read_text(encoding="utf-8")
    for title in (
        "## Versions and settings",
        "## Device",
        "## Probe of 64.00 MiB",
        "## SDPA peaks",
        "## Host run-ahead",
        "## tiny 4-bit llama (dry run)",
    ):
        assert title in report
    assert "FAILED" not in report
    assert "PYTORCH_HIP_ALLOC_CONF = " in report
    # The probe's 64 MiB shows up in the resident-memory rise.
    probe = next(line for line in report.splitlines() if line.startswith("probe "))
    rise = float(probe.split("peak ")[1].split(" MiB")[0])
    assert 64 <= rise < 80
    assert report.count("bfloat16 ") == 2 and report.count("float16  ") == 2
    rows = [line for line in report.splitlines() if line.startswith("| 96 |")]
    assert len(rows) == 3  # context 96, budgets 0, 16 and 64
    assert "whole check:" in report
