"""Concurrent `vramscope calibrate` runs each keep their calibration (#41).

The calibration file is read, merged and replaced under one lock beside it: six runs
started together (real processes) leave six calibrations, each of its own device.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from core.calibration.builtin import DATA_FILE, peak_bound

RUNS = 6


def runs_csv(path: Path, device: str) -> Path:
    """mlxcel's published rows of three models as runs on `device`."""
    lines = ["model,context,inflight_mib,backend,peak_bytes,engine,device"]
    names: list[str] = []
    for line in DATA_FILE.read_text().splitlines()[1:]:
        if line.startswith("#") or line.startswith("model,"):
            continue
        model, ctx, mib, centi = line.split(",")
        if model not in names:
            names.append(model)
        if len(names) <= 3:
            lines.append(f"{model},{ctx},{mib},rocm,{peak_bound(int(centi))},mlx,{device}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_six_calibrate_runs_at_once_keep_six_calibrations(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    devices = [f"gfx11{50 + i}" for i in range(RUNS)]
    files = [runs_csv(tmp_path / f"runs-{d}.csv", d) for d in devices]
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "tui", "calibrate", "--rows", str(f)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    outcomes = [(c.wait(timeout=300), *c.communicate()) for c in children]
    for code, out, err in outcomes:
        assert code == 0, err
        assert "Saved" in out, out
    saved = json.loads((tmp_path / "state" / "vramscope" / "calibration.json").read_text())
    kept = sorted(c["device"] for c in saved["calibrations"])
    assert kept == devices
