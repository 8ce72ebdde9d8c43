"""A FIFO or a device where vramscope expects a file: never a hang, never a traceback.

Each case runs the real command in a child process with a deadline: a FIFO with no
writer would block a plain `open` for ever, `/dev/zero` would never end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.measurement.history import HistoryStore

ROOT = Path(__file__).resolve().parents[3]
DEADLINE_S = 60  # a bound against hangs, not a timing


def vramscope(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def test_a_fifo_history_does_not_hang_the_screenshot(tmp_path: Path) -> None:
    fifo(tmp_path / "state" / "vramscope" / "measurements.jsonl")
    proc = vramscope(tmp_path, "screenshot", str(tmp_path / "shot.svg"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "shot.svg").stat().st_size > 0
    assert "Traceback" not in proc.stderr


def test_a_fifo_catalog_cache_does_not_hang_models(tmp_path: Path) -> None:
    fifo(tmp_path / "cache" / "vramscope" / "catalog.json")
    proc = vramscope(tmp_path, "models", "--json")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["models"]) == 14


def test_a_fifo_hostfile_is_one_line_exit_2(tmp_path: Path) -> None:
    path = fifo(tmp_path / "hosts.json")
    proc = vramscope(
        tmp_path, "measure", "x", "--engine", "mlx", "--tp", "2", "--hostfile", str(path)
    )
    assert proc.returncode == 2
    assert (
        proc.stderr
        == f"vramscope: error: --hostfile: {path}: cannot read it (is not a regular file)\n"
    )


def test_a_hostfile_nested_100k_deep_is_one_line_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    proc = vramscope(
        tmp_path, "measure", "x", "--engine", "mlx", "--tp", "2", "--hostfile", str(path)
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "nested too deep" in proc.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_history_that_is_a_device_is_a_warning_naming_why(tmp_path: Path, device: str) -> None:
    read = HistoryStore(Path(device)).read()
    assert read.results == []
    assert read.warnings == [f"{device}: cannot read the history (is not a regular file)"]


def test_appending_to_a_fifo_history_keeps_it_aside_and_names_both_paths(tmp_path: Path) -> None:
    from tests.factories import peak

    path = fifo(tmp_path / "history.jsonl")
    kept = HistoryStore(path).append(peak())  # never blocks on the FIFO
    assert kept is not None and str(path) in kept and "is not a regular file" in kept
    assert next(p.name for p in tmp_path.iterdir() if p.is_fifo()).startswith(
        "history.jsonl.unreadable-"
    )
    assert len(HistoryStore(path).read().results) == 1


@pytest.mark.parametrize("command", [["inspect", "mlx-community/Qwen3-30B-A3B-4bit"], ["models"]])
def test_a_full_disk_on_stdout_is_one_line_exit_2(tmp_path: Path, command: list[str]) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "tui", *command],
            cwd=ROOT,
            env=env,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=DEADLINE_S,
            check=False,
        )
    assert proc.returncode == 2
    assert proc.stderr == "vramscope: error: cannot write stdout: No space left on device\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["models"],
        ["device", "--no-runtimes"],
        ["inspect", "meta-llama/Llama-3.1-8B-Instruct"],
        ["fit", "--memory-limit", "24GB", "--json"],
        ["device", "--presets"],
    ],
)
def test_a_closed_pipe_ends_quietly_with_141_in_every_command(
    tmp_path: Path, argv: list[str]
) -> None:
    """`vramscope device | head`: the reader has what it wanted; no line, and the status
    of a tool SIGPIPE ended (`yes | head`), whatever the command (#41)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env["HF_HUB_OFFLINE"] = "1"
    reader, writer = os.pipe()
    os.close(reader)  # nobody will read: the first write is EPIPE
    proc = subprocess.run(
        [sys.executable, "-m", "tui", *argv],
        cwd=ROOT,
        env=env,
        stdout=writer,
        stderr=subprocess.PIPE,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    os.close(writer)
    assert (proc.returncode, proc.stderr) == (141, "")
