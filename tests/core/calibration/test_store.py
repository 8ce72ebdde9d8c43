"""The calibration file: atomic, versioned, and a damaged one ignored with one warning."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.backend import Backend
from core.calibration.builtin import builtin_calibration
from core.calibration.record import Calibration, CalibrationOrigin
from core.calibration.store import SIZE_CAP, merged, read_store, write_store
from core.measurement.engine import Engine


def user_copy(**changes: object) -> Calibration:
    import dataclasses

    return dataclasses.replace(builtin_calibration(), origin=CalibrationOrigin.USER, **changes)  # type: ignore[arg-type]


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
    cpu = user_copy(backend=Backend.CPU, device="AMD EPYC", fitted_at="a")
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
    read = read_store(tmp_path / "none.json")
    assert (read.calibrations, read.warnings, read.problem) == ((), (), None)
    assert list(tmp_path.iterdir()) == []  # reading never makes the file or its folder
    # A missing file in a missing folder too: `inspect --calibrated` before any calibrate.
    assert read_store(tmp_path / "no-state" / "none.json") == read
    assert not (tmp_path / "no-state").exists()


OLD_STORE = {
    # What vramscope wrote before calibrations named their figure and chose their margin:
    # `mlx_peak`, no `measured_on`, `mlxcel`, `figure` or `form.margin`.
    "schema": 1,
    "kind": "vramscope-calibrations",
    "vramscope_version": "0.1.0",
    "calibrations": [
        {
            "backend": "cpu",
            "engine": "torch",
            "device": "AMD EPYC",
            "target": "mlx_peak",
            "form": {
                "weights_factor": 1,
                "kv_factor": 2,
                "inflight_factor": 1,
                "fixed_bytes": 16886528,
                "margin_basis_points": 100,
            },
            "runs": 6,
            "models": ["a", "b", "c"],
            "covered_runs": 6,
            "training": {"rows": 6, "covered": 6, "median_overshoot": 0.83,
                         "worst_overshoot": 1.86, "least_overshoot": 0.01},
            "cross_validated": {
                "method": "leave-one-model-out",
                "folds": 3,
                "vramscope": {"rows": 6, "covered": 4, "median_overshoot": 0.83,
                              "worst_overshoot": 1.86, "least_overshoot": -0.29},
                "mlxcel": {"rows": 6, "covered": 0, "median_overshoot": -0.47,
                           "worst_overshoot": -0.31, "least_overshoot": -0.61},
            },
            "origin": "user",
            "fitted_at": "2026-12-01T22:00:00Z",
        }
    ],
}  # fmt: skip


def test_an_old_store_still_reads_with_typed_kinds_and_its_figure_named(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(OLD_STORE))
    read = read_store(path)
    assert read.warnings == ()
    (cal,) = read.calibrations
    assert (cal.backend, cal.engine, cal.device) == (Backend.CPU, Engine.TORCH, "AMD EPYC")
    assert cal.target == "peak"  # `mlx_peak` was the headline peak of any engine
    # A torch run's figure on the CPU is its RSS over baseline, never "MLX's peak".
    assert cal.target_words == "the torch engine's peak resident memory (RSS) over its baseline"
    assert (cal.margin_basis_points, cal.margin_chosen, cal.mlxcel) == (100, False, None)
    assert cal.margin_words == "1% margin (stated)"
    # Written back, the kinds are the same strings as before, and it reads back equal.
    again = tmp_path / "again.json"
    write_store(again, [cal], "test")
    data = json.loads(again.read_text())["calibrations"][0]
    assert (data["backend"], data["engine"], data["measured_on"]) == ("cpu", "torch", "cpu")
    assert read_store(again).calibrations == (cal,)


def test_a_store_naming_an_unknown_engine_is_ignored_with_one_warning(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(OLD_STORE))
    doc["calibrations"][0]["engine"] = "llama.cpp"
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc))
    read = read_store(path)
    assert read.calibrations == ()
    assert len(read.warnings) == 1 and "calibrations[0].engine: expected one of" in read.warnings[0]


def test_an_oversized_file_is_ignored_with_one_warning_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    with path.open("wb") as fh:
        fh.truncate(SIZE_CAP + 1)  # sparse
    got = read_store(path)
    assert got.calibrations == ()
    assert len(got.warnings) == 1 and "over vramscope's" in got.warnings[0]
    assert "a calibration file is a few kB" in got.warnings[0]
    assert "mlxcel" not in got.warnings[0]  # mlxcel never reads a calibration file
