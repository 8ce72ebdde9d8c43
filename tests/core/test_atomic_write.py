"""A file replaced through `atomic_write` is the old one or the new one, never half."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.atomic_write import atomic_write, lock_path, locked
from core.calibration.store import write_store


def test_the_new_bytes_replace_the_old_and_nothing_else_is_left(tmp_path: Path) -> None:
    target = tmp_path / "deeper" / "state.json"
    atomic_write(target, b"old")
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in target.parent.iterdir()) == ["state.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "calibration.json"
    target.write_bytes(b"old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_store(target, [], "test")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calibration.json"]


def test_an_interrupted_write_cleans_up_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "catalog.json"
    target.write_bytes(b"old")

    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.json"]


def test_a_lock_held_by_another_process_past_the_wait_is_an_error_not_a_hang(
    tmp_path: Path,
) -> None:
    target = tmp_path / "calibration.json"
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time; from pathlib import Path; from core.atomic_write import locked\n"
            "with locked(Path(sys.argv[1])):\n print('held', flush=True); time.sleep(60)"
        ), str(target)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        started = time.monotonic()
        with (
            pytest.raises(OSError, match="another process has held the lock"),
            locked(target, wait_s=0.3),
        ):
            pass
        assert time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait()
    with locked(target, wait_s=5):  # the holder is gone: its lock went with it
        pass


def test_a_lock_file_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    target = tmp_path / "calibration.json"
    os.mkfifo(lock_path(target))
    with pytest.raises(OSError, match="not a regular file"), locked(target):
        pass
