"""`vramscope calibrate` end to end: from the history, from a CSV, refusals, a damaged file."""

from __future__ import annotations

import json
import os
import re
import stat
import tracemalloc
from pathlib import Path

import pytest

from core.backend import Backend
from core.calibration.builtin import DATA_FILE, builtin_calibration, peak_bound
from core.catalog.profiles import load_profile, profile_snapshot
from core.estimate.available import AvailableMemory
from core.estimate.estimate import EstimateSettings, Workload, estimate
from core.measurement.history import HISTORY_FILE, HistoryStore
from tests.factories import peak
from tui.cli import main

CPU_MODELS = (
    "google/gemma-2-2b-it",
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def builtin_csv(tmp_path: Path, models: int = 3) -> Path:
    """mlxcel's 18 published rows as a user's runs file (bytes, not centi-GB)."""
    lines = ["model,context,inflight_mib,backend,peak_bytes,engine,device"]
    names: list[str] = []
    for line in DATA_FILE.read_text().splitlines()[1:]:
        if line.startswith("#") or line.startswith("model,"):
            continue
        model, ctx, mib, centi = line.split(",")
        if model not in names:
            names.append(model)
        if len(names) <= models:
            lines.append(f"{model},{ctx},{mib},rocm,{peak_bound(int(centi))},mlx,gfx1151")
    path = tmp_path / "runs.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_csv_of_mlxcel_s_rows_gives_the_builtin_fit(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "calibrate", "--rows", str(builtin_csv(tmp_path)))
    assert (code, err) == (0, "")
    assert "Calibrated (vramscope): mlx on rocm gfx1151, 18 runs of 3 models" in out
    assert "  Fitted to:     MLX's peak (mx.get_peak_memory)\n" in out
    assert "then + 1% margin (the least; no model held out missed by more)" in out
    assert "vramscope:   18 of 18 covered; overshoot median +4.05%, worst +20.43%" in out
    assert "mlxcel:      18 of 18 covered; overshoot median +7.60%, worst +31.87%" in out
    saved = json.loads((state_home / "vramscope" / "calibration.json").read_text())
    (cal,) = saved["calibrations"]
    assert cal["form"]["fixed_bytes"] == builtin_calibration().fixed_bytes
    assert cal["cross_validated"] == builtin_calibration().to_dict()["cross_validated"]


def test_one_model_is_refused_with_the_reason_and_nothing_is_saved(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = run(capsys, "calibrate", "--rows", str(builtin_csv(tmp_path, models=1)))
    assert code == 2
    assert "needs runs of at least 2 models, got 1" in err
    assert "predicting one model's runs from another model's" in err
    assert err.count("\n") == 1
    assert not (state_home / "vramscope" / "calibration.json").exists()


def test_two_models_give_a_fit_with_one_warning_that_it_is_not_cross_validated(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "calibrate", "--rows", str(builtin_csv(tmp_path, models=2)))
    assert code == 0
    (warning,) = err.splitlines()
    assert warning.startswith(
        "vramscope: warning: mlx on rocm gfx1151: not cross-validated: runs of 2 models, and "
        "leave-one-model-out needs 3"
    )
    assert "Calibrated (vramscope): mlx on rocm gfx1151, 12 runs of 2 models" in out
    assert (
        "  Held out:      not cross-validated (runs of 2 models; leave-one-model-out needs 3)"
        in out
    )
    assert "  Training runs: 12 of 12 covered" in out
    (cal,) = json.loads((state_home / "vramscope" / "calibration.json").read_text())["calibrations"]
    assert cal["cross_validated"] is None and cal["runs"] == 12
    assert cal["form"]["margin"] == "leave-one-model-out"
    # and inspect says so where it shows it
    code, out, err = run(
        capsys, "inspect", "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit", "--backend", "rocm",
        "--max-tokens", "640", "--calibration-device", "gfx1151",
    )  # fmt: skip
    assert code == 0
    assert out.splitlines()[-1].endswith("; not cross-validated: runs of 2 models)")


def test_an_unknown_model_in_a_csv_is_one_line_naming_the_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.csv"
    path.write_text("model,context,inflight_mib,backend,peak_bytes\nno/such-model,640,0,cpu,5\n")
    code, out, err = run(capsys, "calibrate", "--rows", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"vramscope: error: {path}:2: ") and err.count("\n") == 1


def test_the_history_calibrates_each_engine_backend_and_device_on_its_own(
    state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = HistoryStore(state_home / "vramscope" / HISTORY_FILE)
    peaks = {
        CPU_MODELS[0]: 7_000_000_000,
        CPU_MODELS[1]: 17_500_000_000,
        CPU_MODELS[2]: 16_000_000_000,
    }
    for model, peak_bytes in peaks.items():
        store.append(
            peak(model, inflight=0, engine="mlx", peak_bytes=peak_bytes, device_name="EPYC")
        )
    store.append(peak(CPU_MODELS[0], device_kind="rocm", arch="gfx1100", engine="mlx"))
    code, out, err = run(capsys, "calibrate", "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    (cal,) = doc["calibrations"]
    assert (cal["engine"], cal["backend"], cal["device"], cal["runs"]) == ("mlx", "cpu", "EPYC", 3)
    (refused,) = doc["refused"]
    assert (refused["backend"], refused["device"], refused["runs"]) == ("rocm", "gfx1100", 1)
    # the fixed part is the largest excess of a peak over W + 2 KV (no in-flight term on the CPU)
    settings = EstimateSettings(Backend.CPU, AvailableMemory(0, "test"))
    excess = []
    for model, peak_bytes in peaks.items():
        est = estimate(profile_snapshot(load_profile(model)), Workload(640), settings)
        excess.append(peak_bytes - est.weights_bytes - 2 * est.kv_bytes)
    assert cal["form"]["fixed_bytes"] == max(excess)
    assert cal["covered_runs"] == 3


UNREADABLE_STORES = {
    "truncated": b'{"kind": "vramscope-calibrations", "schema": 1, "calibrations": [',
    "newer schema": b'{"kind": "vramscope-calibrations", "schema": 2, "calibrations": []}\n',
    "garbage": b"\x00\xffnot json at all",
    "fifo": None,
}


@pytest.mark.parametrize("kind", list(UNREADABLE_STORES))
def test_a_calibration_file_that_cannot_be_read_is_kept_aside_under_the_printed_name(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = state_home / "vramscope" / "calibration.json"
    path.parent.mkdir(parents=True)
    content = UNREADABLE_STORES[kind]
    if content is None:
        os.mkfifo(path)
    else:
        path.write_bytes(content)
    code, _out, err = run(capsys, "calibrate", "--rows", str(builtin_csv(tmp_path)))
    assert code == 0
    assert err.count("\n") == 1, err
    found = re.search(r"kept it as (\S+calibration\.json\.unreadable-\d{8}T\d{6}Z) ", err)
    assert found is not None, err
    aside = Path(found.group(1))
    assert aside.parent == path.parent
    if content is None:
        assert stat.S_ISFIFO(aside.lstat().st_mode)
    else:
        assert aside.read_bytes() == content
    assert len(json.loads(path.read_text())["calibrations"]) == 1


def test_a_fit_the_reader_would_refuse_is_never_saved_and_the_file_is_kept(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A context of 2^64-1 fits a fixed part of -3.7e19 bytes, below the reader's -2^63.
    run(capsys, "calibrate", "--rows", str(builtin_csv(tmp_path)))
    path = state_home / "vramscope" / "calibration.json"
    before = path.read_bytes()
    rows = tmp_path / "huge.csv"
    rows.write_text(
        "model,context,inflight_mib,backend,peak_bytes,device\n"
        f"{CPU_MODELS[0]},{2**64 - 1},0,cpu,1000000,big\n"
        f"{CPU_MODELS[1]},{2**64 - 1},0,cpu,1000000,big\n"
    )
    code, _out, err = run(capsys, "calibrate", "--rows", str(rows))
    assert code == 2
    assert "form.fixed_bytes" in err and "outside what a calibration file holds" in err
    assert path.read_bytes() == before


def test_no_runs_at_all_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "calibrate")
    assert (code, out) == (2, "")
    assert err.startswith("vramscope: error: no measured runs to calibrate on in ")


def test_target_picks_the_csv_column_it_fits_and_the_fit_names_it(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = builtin_csv(tmp_path).read_text().splitlines()
    extra = 300_000_000  # every run's OS peak 300 MB above MLX's
    lines = [rows[0] + ",os_peak_bytes"] + [f"{r},{int(r.split(',')[4]) + extra}" for r in rows[1:]]
    path = tmp_path / "footprint.csv"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "calibrate", "--rows", str(path), "--target", "os_peak")
    assert (code, err) == (0, "")
    assert "  Fitted to:     the process's OS peak" in out
    (cal,) = json.loads((state_home / "vramscope" / "calibration.json").read_text())["calibrations"]
    assert cal["target"] == "os_peak"
    assert cal["form"]["fixed_bytes"] == builtin_calibration().fixed_bytes + extra
    code, out, err = run(capsys, "calibrate", "--rows", str(path), "--json")
    assert json.loads(out)["calibrations"][0]["target"] == "peak"
    assert json.loads(out)["calibrations"][0]["form"]["fixed_bytes"] == (
        builtin_calibration().fixed_bytes
    )
    # the old name of the default still works, and the fit is saved by the new one
    code, out, err = run(capsys, "calibrate", "--rows", str(path), "--target", "mlx_peak", "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["target"] == doc["calibrations"][0]["target"] == "peak"
    assert doc["calibrations"][0]["figure"] == "MLX's peak (mx.get_peak_memory)"


def test_a_target_whose_column_the_csv_lacks_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = builtin_csv(tmp_path)
    code, out, err = run(capsys, "calibrate", "--rows", str(path), "--target", "active_plus_cache")
    assert (code, out) == (2, "")
    assert err == (
        f"vramscope: error: {path}: --target active_plus_cache needs the column "
        "'active_plus_cache_peak_bytes', which the file lacks\n"
    )


def runs_csv(path: Path, runs: int) -> Path:
    """`runs` runs of 24 workloads (3 models x 8 contexts), a comment line every 1,000."""
    lines = ["# a long runs file", "model,context,inflight_mib,backend,peak_bytes,engine,device"]
    for n in range(runs):
        if n % 1000 == 0:
            lines.append(f"# block {n // 1000}")
        peak_bytes = 30_000_000_000 + n * 7919 % 10**9
        lines.append(f"{CPU_MODELS[n % 3]},{512 * (1 + n % 8)},0,rocm,{peak_bytes},mlx,gfx1151")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_runs_file_is_streamed_holding_no_object_per_run(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A Python object per run (an int is 28 bytes, a float 24) would cost more than 24
    # bytes a run; a peak kept in its workload's array costs 8.
    small, large = runs_csv(tmp_path / "small.csv", 1_000), runs_csv(tmp_path / "large.csv", 31_000)
    run(capsys, "calibrate", "--rows", str(small))  # imports and caches out of the figures
    peaks = []
    for path, runs in ((small, 1_000), (large, 31_000)):
        tracemalloc.start()
        try:
            code, out, err = run(capsys, "calibrate", "--rows", str(path))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert (code, err) == (0, "")
        assert f"mlx on rocm gfx1151, {runs} runs of 3 models" in out
    per_run = (peaks[1] - peaks[0]) / 30_000
    assert per_run < 24, f"{per_run:.0f} bytes of memory per run: runs are held, not streamed"


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_an_unreadable_history_is_said_with_where_not_as_no_runs(
    state_home: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    history = state_home / "vramscope" / HISTORY_FILE
    history.parent.mkdir(parents=True)
    if kind == "folder":
        history.mkdir()
    else:
        os.mkfifo(history)
    code, out, err = run(capsys, "calibrate")
    assert (code, out) == (2, "")
    assert err == (
        f"vramscope: error: {history}: cannot read the history "
        f"({'is a directory' if kind == 'folder' else 'is not a regular file'}), so there "
        "are no measured runs to calibrate on\n"
    )


def test_builtin_prints_the_load_refitted_on_mlxcel_s_peaks_beside_mlxcel(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "calibrate", "--builtin")
    assert (code, err) == (0, "")
    load = out[out.index("Load calibrated (vramscope, mlx-lm load)") :]
    assert "W + KV + in-flight + 0.50 x transient" in load
    held_out = load[load.index("Held out, leave-one-model-out (3 folds)") :].splitlines()
    assert held_out[1].strip().startswith("vramscope:   15 of 18 covered; overshoot median +2.71%")
    assert held_out[2].strip().startswith("mlxcel:      18 of 18 covered; overshoot median +7.60%")
    # the mlxcel-form calibration is printed first, unchanged
    assert out.startswith("Calibrated (vramscope): mlx on rocm gfx1151, 18 runs of 3 models")
