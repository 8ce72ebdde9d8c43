"""Out of memory in real processes: one line naming memory, exit 2, in every command.

The limits are real (`RLIMIT_AS`, a thread stack larger than the address space left),
set inside a fresh interpreter before the command runs."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.installed import need
from tests.tui.commands.test_cli_calibrate import builtin_csv
from tests.tui.commands.test_cli_measure import ROOT

NO_THREAD = """
import resource, sys, threading
resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))
threading.stack_size(2**31 - 2**20)  # no thread can start: no room for its stack
from tui.cli import main
sys.exit(main(sys.argv[1:]))
"""

TIGHT = """
import resource, sys
from tui.cli import main
import core.calibration.run, tui.commands.calibrate  # what the command imports
with open("/proc/self/statm") as fh:
    used = int(fh.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + 2 * 2**20, used + 2 * 2**20))
sys.exit(main(sys.argv[1:]))
"""

SMALL = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (60 * 2**20, resource.RLIM_INFINITY))  # ulimit -v 61440
from tui.cli import main
sys.exit(main(sys.argv[1:]))
"""

LOAD_TORCH = """
import resource
from hip_backend.errors import MeasureError
from hip_backend.torch_engine.device import import_torch
with open("/proc/self/statm") as fh:
    used = int(fh.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + 50 * 2**20, used + 50 * 2**20))
try:
    import_torch()
except MeasureError as exc:
    print(exc.kind.value, exc)
"""


def python(
    script: str, *args: str, tmp_path: Path, terminal: int | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `script` in a fresh interpreter (stdin and stdout on `terminal`, a pty's
    follower, where given)."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        stdin=terminal,
        stdout=subprocess.PIPE if terminal is None else terminal,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env=env,
    )


def one_memory_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert "out of memory" in last
    assert "Traceback" not in done.stderr
    assert "model folder" not in done.stderr
    return last


@pytest.mark.slow
def test_measure_whose_thread_cannot_start_is_one_line(
    tmp_path: Path,
) -> None:
    done = python(
        NO_THREAD,
        "measure",
        "Qwen/Qwen2.5-7B-Instruct",
        "--device",
        "cpu",
        "--no-history",
        tmp_path=tmp_path,
    )
    last = one_memory_line(done)
    assert "measurement failed (out of memory)" in last and "cannot start a thread" in last


@pytest.mark.slow
def test_screenshot_whose_threads_cannot_start_is_one_line(tmp_path: Path) -> None:
    done = python(NO_THREAD, "screenshot", str(tmp_path / "shot.svg"), tmp_path=tmp_path)
    assert one_memory_line(done).startswith("vramscope: error: out of memory: a thread")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["screenshot", "explore"])
def test_the_explorer_in_too_small_an_address_space_is_refused_before_it_starts(
    tmp_path: Path, command: str
) -> None:
    # At 50-70 MB the screenshot segfaulted (CPython 3.11 recursing in MemoryError_new),
    # hung on a worker thread that never started, or ended in a MemoryError, run to run.
    if command == "screenshot":
        done = python(SMALL, command, str(tmp_path / "shot.png"), tmp_path=tmp_path)
    else:  # the explorer asks for a terminal first: give it one
        leader, follower = pty.openpty()
        try:
            done = python(SMALL, command, tmp_path=tmp_path, terminal=follower)
        finally:
            os.close(leader)
            os.close(follower)
    last = one_memory_line(done)
    assert last.startswith("vramscope: error: out of memory: the explorer")
    assert "needs an address space of at least 512 MiB" in last
    assert "limited to 60 MiB (ulimit -v 61440)" in last
    assert done.stderr.count("\n") == 1 and not (tmp_path / "shot.png").exists()


@pytest.mark.slow
def test_calibrate_out_of_memory_names_memory_not_the_model_folder(tmp_path: Path) -> None:
    rows = builtin_csv(tmp_path)
    rows.write_text(rows.read_text() + "# padding\n" * 400_000)  # 4 MB to read
    done = python(TIGHT, "calibrate", "--rows", str(rows), tmp_path=tmp_path)
    assert one_memory_line(done).startswith("vramscope: error: out of memory: ")


@pytest.mark.slow
def test_torch_that_fails_to_load_is_not_said_to_be_missing(tmp_path: Path) -> None:
    need("torch")
    done = python(LOAD_TORCH, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("out_of_memory torch is installed but failed to load")
    assert "not installed" not in done.stdout and "cannot be imported" not in done.stdout
