"""A measuring process never outlives the vramscope that asked for it (#16).

The real command is started, killed with SIGTERM or SIGKILL mid-run, and 2 s later no
process it started (the child, mlx.launch, the ranks) may still be alive: they are
found by the `VRAMSCOPE_PARENT` token they were handed (hip_backend/parent_watch.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GRACE_S = 60.0
"""How long a group may take to go once it should: a hang guard, polled (a group that
ends at once is not waited on), not a window: a loaded machine took more than 2 s."""


def left_after_grace(pid: int) -> list[int]:
    """`pid`'s processes still alive once none is left or GRACE_S has passed: polled,
    so a group that ends at once is not waited on for the whole grace."""
    deadline = time.monotonic() + GRACE_S
    while (left := descendants_of(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def descendants_of(pid: int) -> list[int]:
    """Live processes (zombies excluded) that were handed `pid` as their parent."""
    found = []
    marker = f"VRAMSCOPE_PARENT={pid}:".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def start(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui", *argv],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def wait_for_children(parent: subprocess.Popen[str], count: int, deadline_s: float = 120) -> None:
    deadline = time.monotonic() + deadline_s
    while len(descendants_of(parent.pid)) < count:
        assert parent.poll() is None, "the command ended before its children started"
        assert time.monotonic() < deadline, "the measuring processes never started"
        time.sleep(0.1)
    time.sleep(1.0)  # into the load / prefill


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
@pytest.mark.parametrize(
    ("engine", "children"), [(["--engine", "torch"], 1), (["--engine", "mlx"], 1)],
    ids=["torch", "mlx"],
)  # fmt: skip
def test_the_child_dies_with_its_parent(
    tiny_llama: Path, sig: signal.Signals, engine: list[str], children: int
) -> None:
    parent = start(
        "measure", str(tiny_llama), "--device", "cpu", "--prompt-tokens", "8192",
        "--gen-tokens", "512", "--no-history", *engine,
    )  # fmt: skip
    try:
        wait_for_children(parent, children)
        os.kill(parent.pid, sig)
        parent.wait(30)
        assert left_after_grace(parent.pid) == []
    finally:
        with_kill(parent)


def test_a_two_rank_run_dies_with_its_parent_and_leaves_no_scratch(
    tiny_llama: Path, tmp_path: Path
) -> None:
    before = set(Path("/tmp").glob("vramscope-ranks-*"))
    parent = start(
        "measure", str(tiny_llama), "--engine", "mlx", "--tp", "2", "--prompt-tokens", "8192",
        "--gen-tokens", "512", "--no-history",
    )  # fmt: skip
    try:
        wait_for_children(parent, 2)  # both ranks (mlx.launch is not ours to mark)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(30)
        assert left_after_grace(parent.pid) == []
        assert set(Path("/tmp").glob("vramscope-ranks-*")) - before == set()
    finally:
        with_kill(parent)


def with_kill(parent: subprocess.Popen[str]) -> None:
    """Leave nothing behind, whatever the test found."""
    for pid in [*descendants_of(parent.pid), parent.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    parent.wait(10)


def test_the_watcher_kills_its_group_once_a_silent_parent_dies() -> None:
    # A child that writes nothing (a long load, a quiet rank) gets no EPIPE to die of:
    # only the watcher ends it.
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    code = (
        "import sys, time; from hip_backend.parent_watch import watch_parent; "
        "assert watch_parent(token=sys.argv[1]); print('watching', flush=True); time.sleep(120)"
    )
    from hip_backend.parent_watch import parent_token

    watched = subprocess.Popen(
        [sys.executable, "-c", code, parent_token(parent.pid)],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert watched.stdout is not None
        assert watched.stdout.readline() == "watching\n"  # the watch is on: then the death
        time.sleep(1.0)  # a watch that misfired would have killed it by now
        assert watched.poll() is None  # alive while its parent is
        parent.kill()
        parent.wait(10)
        assert watched.wait(timeout=GRACE_S) == -signal.SIGKILL
    finally:
        for proc in (parent, watched):
            proc.kill()
            proc.wait(10)
