"""A file replaced through `atomic_write` is the old one or the new one, never half."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.atomic_write import atomic_write
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
