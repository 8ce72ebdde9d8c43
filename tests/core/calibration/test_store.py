"""The calibration file: atomic, versioned, and a damaged one ignored with one warning."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.calibration.builtin import builtin_calibration
from core.calibration.record import Calibration
from core.calibration.select import choose
from core.calibration.store import SIZE_CAP, merged, read_store, write_store


def user_copy(**changes: object) -> Calibration:
    import dataclasses

    return dataclasses.replace(builtin_calibration(), origin="user", **changes)  # type: ignore[arg-type]


def test_a_saved_calibration_reads_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "state" / "calibration.json"
    cal = user_copy(fitted_at="2026-12-01T22:00:00Z")
    write_store(path, [cal], "0.1.0")
    data = json.loads(path.read_text())
    assert (data["schema"], data["kind"]) == (1, "vramscope-calibrations")
    assert read_store(path).calibrations == (cal,)
    assert [p.name for p in path.parent.iterdir()] == ["calibration.json"]  # no temp left


def test_calibrate_replaces_only_the_calibration_of_the_same_key() -> None:
    gfx = user_copy(fitted_at="a")
    cpu = user_copy(backend="cpu", device="AMD EPYC", fitted_at="a")
    newer = user_copy(fitted_at="b")
    assert merged([gfx, cpu], [newer]) == [cpu, newer]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"kind": "something else"}', "not a vramscope-calibrations file"),
        (b'{"kind": "vramscope-calibrations", "schema": 99, "calibrations": []}', "schema 99"),
        (
            b'{"kind": "vramscope-calibrations", "schema": 1, "calibrations": [{"backend": "x"}]}',
            "calibrations[0].",
        ),
        (b"\xff\xfe", "not valid UTF-8"),
    ],
)
def test_a_damaged_file_is_ignored_with_one_warning(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = tmp_path / "calibration.json"
    path.write_bytes(content)
    read = read_store(path)
    assert read.calibrations == ()
    assert len(read.warnings) == 1
    assert str(path) in read.warnings[0]
    assert why in read.warnings[0]


def test_a_fifo_or_a_folder_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "calibration.json"
    os.mkfifo(fifo)
    read = read_store(fifo)
    assert read.calibrations == () and "not a regular file" in read.warnings[0]
    assert "not a regular file" in read_store(tmp_path).warnings[0]


def test_a_missing_file_is_empty_and_silent(tmp_path: Path) -> None:
    assert read_store(tmp_path / "none.json") == read_store(tmp_path / "none.json")
    assert read_store(tmp_path / "none.json").warnings == ()


def test_the_user_s_calibration_comes_before_the_builtin_one() -> None:
    builtin = builtin_calibration()
    mine = user_copy(fixed_bytes=1, fitted_at="2026-12-01")
    assert choose([builtin, mine], "rocm") is mine
    assert choose([builtin], "rocm", device="gfx1151") is builtin
    assert choose([builtin], "rocm", device="gfx1100") is None
    assert choose([builtin, mine], "cpu") is None  # CPU never takes a ROCm calibration
    whole = user_copy(device=None, engine=None, fitted_at="2026-12-02")
    # the most specific user calibration wins when a device is named, the latest otherwise
    assert choose([mine, whole], "rocm", device="gfx1151") is mine
    assert choose([mine, whole], "rocm") is whole


def test_an_oversized_file_is_ignored_with_one_warning_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    with path.open("wb") as fh:
        fh.truncate(SIZE_CAP + 1)  # sparse
    got = read_store(path)
    assert got.calibrations == ()
    assert len(got.warnings) == 1 and "over vramscope's" in got.warnings[0]
