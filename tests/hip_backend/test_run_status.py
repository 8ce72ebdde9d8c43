"""A run is what it was (#41 item 4): the command's exit status and signal are recorded
with its peak; a failed or killed run is never "covered" (`table --history`, the
explorer's history screen, `run` itself) and never fitted by `calibrate` unless
`--include-failed`; `run --json` says all of it. Real commands under `vramscope run`,
then the real `table` and `calibrate` on the history they wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.measurement.history import decode_record
from tests.tui.helpers import build_app, fixed_deps, settle

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
MODELS = ("Qwen/Qwen2.5-7B-Instruct", "google/gemma-2-2b-it")
# 50 MB held past the first samples, then the end: a SIGKILL of its own, or exit 1.
KILLED = "x = b'a' * 50_000_000; import os, time; time.sleep(0.6); os.kill(os.getpid(), 9)"
EXITS_1 = "x = b'a' * 50_000_000; import time; time.sleep(0.6); raise SystemExit(1)"


def vramscope(state: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    return subprocess.run(
        [PY, "-m", "tui", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def failed_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Two failed runs of two models (137 by SIGKILL, 1), and `run --json`'s documents."""
    state = tmp_path_factory.mktemp("state")
    documents = []
    for model, code, status in ((MODELS[0], KILLED, 137), (MODELS[1], EXITS_1, 1)):
        ran = vramscope(
            state, "run", "--json", "-m", model, "--max-tokens", "1024", "--", PY, "-c", code
        )
        assert ran.returncode == status, ran.stderr
        documents.append(ran.stdout)
    return state, documents


def test_run_json_says_the_status_and_never_covered(
    failed_history: tuple[Path, list[str]],
) -> None:
    _, documents = failed_history
    killed, exited = (json.loads(d) for d in documents)
    assert (killed["exit_status"], killed["failed"]) == (137, "exit status 137 (SIGKILL)")
    assert killed["measured"]["extra"]["exit_signal"] == 9
    assert killed["measured"]["peak_bytes"] > 50_000_000
    # The 7B estimate is far above 50 MB: the margin is positive, yet not covered.
    assert killed["margin"]["bytes"] > 0 and killed["margin"]["covered"] is False
    assert (exited["exit_status"], exited["failed"]) == (1, "exit status 1")
    assert exited["margin"]["covered"] is False


def test_the_history_records_the_status_and_table_shows_it(
    failed_history: tuple[Path, list[str]],
) -> None:
    state, _ = failed_history
    lines = (state / "vramscope" / "measurements.jsonl").read_bytes().splitlines()
    peaks = [decode_record(line) for line in lines]
    assert [(p.exit_status, p.failed_status) for p in peaks] == [
        (137, "exit status 137 (SIGKILL)"),
        (1, "exit status 1"),
    ]
    table = vramscope(state, "table", "--history", *MODELS)
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if "| your command |" in line]
    assert len(rows) == 2
    assert rows[0].endswith("| no: failed, exit status 137 (SIGKILL) |")
    assert rows[1].endswith("| no: failed, exit status 1 |")
    assert "2 run(s) failed." in table.stdout
    assert "| yes |" not in table.stdout


def test_calibrate_leaves_failed_runs_out_unless_asked(
    failed_history: tuple[Path, list[str]], tmp_path: Path
) -> None:
    state, _ = failed_history
    left_out = vramscope(state, "calibrate", "--engine", "external")
    assert left_out.returncode == 2
    assert "left out 2 failed run(s) (exit status 1, 137)" in left_out.stderr
    assert "--include-failed fits them" in left_out.stderr
    assert "no measured runs to calibrate on" in left_out.stderr
    assert not (state / "vramscope" / "calibration.json").exists()
    fitted = vramscope(state, "calibrate", "--engine", "external", "--include-failed", "--json")
    assert fitted.returncode == 0, fitted.stderr
    calibrations = json.loads(fitted.stdout)["calibrations"]
    assert [c["engine"] for c in calibrations] == ["external"]


def test_an_old_history_line_still_reads() -> None:
    # Written by vramscope run before the signal, ru_maxrss and how it followed.
    old = {
        "schema": 1,
        "kind": "measurement",
        "result": {
            "model": MODELS[0],
            "device_kind": "cpu",
            "device_name": "host",
            "peak_bytes": 60_000_000,
            "peak_kind": "host RSS",
            "inflight_mib": 0,
            "prompt_tokens": 0,
            "gen_tokens": 1024,
            "synthetic_weights": False,
            "load_seconds": 0.0,
            "prefill_tokens_per_s": 0.0,
            "decode_tokens_per_s": 0.0,
            "torch_version": "",
            "estimate_bytes": 9_000_000_000,
            "engine": "external",
            "extra": {"command": "x", "figure": "host", "exit_status": 137, "samples": 3},
        },
    }
    peak = decode_record(json.dumps(old).encode())
    assert peak.failed_status == "exit status 137" and peak.covered is False
    old["result"]["extra"]["exit_status"] = 0  # type: ignore[index]
    assert decode_record(json.dumps(old).encode()).covered is True


async def test_the_explorer_s_history_never_calls_a_failed_run_covered(
    failed_history: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import DataTable

    from core.measurement.history import HistoryStore
    from tui.screens.history_screen import HistoryScreen

    state, _ = failed_history
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    app = build_app(fixed_deps(history=HistoryStore.default), preset="gfx1151")
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one(DataTable)
        covered = [str(table.get_row_at(i)[-1]) for i in range(table.row_count)]
        assert covered == ["✗ exit 1", "✗ exit 137"]  # newest first


def test_a_deleted_working_directory_is_said_not_blamed_on_the_program(tmp_path: Path) -> None:
    # Started from a folder that was deleted, `run` said "cannot run: No such file or
    # directory", as if `true` were missing (#41).
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        "import os, subprocess, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "done = subprocess.run([sys.executable, '-m', 'tui', 'run', '--', 'true'],"
        " capture_output=True, text=True, timeout=120)\n"
        "sys.stderr.write(done.stderr); sys.exit(done.returncode)\n"
    )
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [PY, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "vramscope: error: cannot run: the working directory no longer exists "
        "(cd to a folder that does)"
    )
