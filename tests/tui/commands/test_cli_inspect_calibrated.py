"""`inspect --calibrated`: vramscope's line and object beside mlxcel's, which stay as they were."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from core.calibration.builtin import builtin_calibration, builtin_load_fit
from core.calibration.record import CalibrationOrigin
from core.calibration.store import write_store
from core.probes.cpuinfo import read_cpu_name
from tests.core.helpers import GFX1151_LIMIT, LLAMA_4BIT, QWEN3_MOE_4BIT
from tui.cli import main

ROCM_640 = ["--max-tokens", "640", "--backend", "rocm", "--memory-limit", str(GFX1151_LIMIT)]
GFX1151 = ["--calibration-device", "gfx1151"]
"""The device the built-in calibration was fitted on, named (it applies only there)."""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("model", [LLAMA_4BIT, QWEN3_MOE_4BIT])
def test_the_banner_is_mlxcel_s_byte_for_byte_with_the_calibrated_lines_added(
    capsys: pytest.CaptureFixture[str], model: str
) -> None:
    _, plain, _ = run(capsys, "inspect", model, *ROCM_640)
    code, out, err = run(capsys, "inspect", model, *ROCM_640, "--calibrated", *GFX1151)
    assert (code, err) == (0, "")
    assert out.startswith(plain)
    added, load = out[len(plain) :].splitlines()
    assert added.startswith("  Calibrated (vramscope, 18 runs on gfx1151): ")
    assert "built-in, mlxcel's published peaks" in added
    assert "; fitted to MLX's peak (mx.get_peak_memory); held-out runs 18 of 18 covered" in added
    # The built-in calibration carries the load's fit on the same 18 peaks, and its
    # leave-one-model-out figure (as `vramscope calibrate --builtin` prints it).
    fit = builtin_load_fit()
    assert fit.held_out is not None
    assert load.startswith("  Load calibrated (vramscope, 18 runs on gfx1151): ")
    assert f"with {fit.scale_percent / 100:.2f} x transient" in load
    assert "built-in, mlxcel's published peaks" in load
    assert f"held-out runs {fit.held_out.covered} of 18 covered" in load


def test_the_calibrated_total_is_the_builtin_form_for_the_workload(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "inspect", QWEN3_MOE_4BIT, *ROCM_640, "--json", *GFX1151)
    report = json.loads(out)
    w, k = report["weights_bytes"], report["kv_bytes_total"]
    s = w + 2 * k + 1024 * 2**20 + builtin_calibration().fixed_bytes
    cal = report["calibrated"]
    assert cal["total_bytes"] == s + -(-s // 100) == 19_125_354_894
    # mlxcel's published peak for this run: 18.66 GB; mlxcel's total overshoots it by 16.7%
    assert 18_665_000_000 <= cal["total_bytes"] < report["total_bytes"]
    assert (cal["runs"], cal["covered_runs"], cal["device"], cal["engine"], cal["backend"]) == (
        18,
        18,
        "gfx1151",
        "mlx",
        "rocm",
    )
    assert len(cal["models"]) == 3 and cal["origin"] == "builtin"
    assert cal["cross_validated"]["vramscope"]["covered"] == 18


def test_every_mlxcel_key_is_identical_and_calibrated_comes_last(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gfx1151 = ["--max-tokens", "640", "--preset", "gfx1151", "--json"]  # names the device
    _, plain, _ = run(capsys, "inspect", LLAMA_4BIT, *gfx1151)
    _, out, _ = run(capsys, "inspect", LLAMA_4BIT, *gfx1151, "--calibrated")
    before = json.loads(plain, object_pairs_hook=list)
    after = json.loads(out, object_pairs_hook=list)
    assert after[:-1] == before
    assert after[-1][0] == "calibrated"
    # and the text of mlxcel's keys is the same bytes, up to the added last member
    assert out.startswith(plain.rstrip().removesuffix("}").rstrip())


def test_no_matching_calibration_is_one_line_and_mlxcel_s_estimate_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cpu = ["--max-tokens", "640", "--backend", "cpu", "--memory-limit", str(GFX1151_LIMIT)]
    _, plain, _ = run(capsys, "inspect", LLAMA_4BIT, *cpu)
    code, out, err = run(capsys, "inspect", LLAMA_4BIT, *cpu, "--calibrated")
    assert (code, err) == (0, "")
    assert out[len(plain) :] == (  # the CPU named is this machine's
        f"  Calibrated (vramscope): no calibration for cpu {read_cpu_name()}; mlxcel's "
        "estimate only (vramscope calibrate fits one from measured runs)\n"
    )
    code, out, err = run(capsys, "inspect", LLAMA_4BIT, *cpu, "--calibrated", "--json")
    assert json.loads(out)["calibrated"] is None
    assert err.count("\n") == 1 and "no calibration for cpu" in err


def test_rocm_with_no_device_named_gets_no_gfx1151_calibration_and_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The issue: on a machine with no GPU, ROCm chosen and no device named, the built-in
    # gfx1151 calibration was shown as if it were this machine's.
    _, plain, _ = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640)
    code, out, err = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640, "--calibrated")
    assert (code, err) == (0, "")
    assert "gfx1151):" not in out and "18 runs" not in out
    assert out[len(plain) :] == (
        "  Calibrated (vramscope): no calibration for rocm: the built-in one is for gfx1151, "
        "and no device is named (a preset or --calibration-device names it); mlxcel's "
        "estimate only (vramscope calibrate fits one from measured runs)\n"
    )
    _, out, err = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640, "--calibrated", "--json")
    assert json.loads(out)["calibrated"] is None
    assert "the built-in one is for gfx1151, and no device is named" in err
    # the preset of that device names it
    _, out, _ = run(capsys, "inspect", LLAMA_4BIT, "--preset", "gfx1151", "--calibrated")
    assert "Calibrated (vramscope, 18 runs on gfx1151): " in out


def test_the_user_s_calibration_comes_first_and_a_file_can_be_named(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = dataclasses.replace(
        builtin_calibration(), origin=CalibrationOrigin.USER, fixed_bytes=0, fitted_at="t"
    )
    write_store(state_home / "vramscope" / "calibration.json", [mine], "test")
    rocm = [*ROCM_640, *GFX1151, "--json"]
    _, out, _ = run(capsys, "inspect", LLAMA_4BIT, *rocm, "--calibrated")
    assert json.loads(out)["calibrated"]["origin"] == "user"
    _, out, _ = run(capsys, "inspect", LLAMA_4BIT, *rocm, "--calibration", "builtin")
    assert json.loads(out)["calibrated"]["origin"] == "builtin"
    other = tmp_path / "theirs.json"
    write_store(other, [mine], "test")
    _, out, _ = run(capsys, "inspect", LLAMA_4BIT, *rocm, "--calibration", str(other))
    assert json.loads(out)["calibrated"]["origin"] == str(other)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--calibration", "nowhere.json"], "--calibration: nowhere.json: no such file"),
        (["--calibrated", "--tp", "2"], "--calibrated: a calibrated estimate is single-device"),
    ],
)
def test_bad_requests_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, out, err = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640, *extra)
    assert (code, out) == (2, "")
    assert err.startswith(f"vramscope: error: {message}") and err.count("\n") == 1


def test_a_damaged_named_file_is_an_error_and_a_damaged_own_file_a_warning(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    code, out, err = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640, "--calibration", str(bad))
    assert (code, out) == (2, "")
    assert err.startswith(
        f"vramscope: error: --calibration: {bad}: not a usable calibration file ("
    )
    assert err.count("\n") == 1
    own = state_home / "vramscope" / "calibration.json"
    own.parent.mkdir(parents=True)
    own.write_text("{")
    code, out, err = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640, *GFX1151)
    assert code == 0 and err.count("\n") == 1 and "ignored the calibration file" in err
    assert "built-in, mlxcel's published peaks" in out


def test_a_device_or_engine_narrows_the_choice(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640, "--calibration-device", "GFX1151")
    assert code == 0 and "18 runs on gfx1151" in out
    _, out, _ = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640, "--calibration-device", "gfx1100")
    assert out.splitlines()[-1] == (
        "  Calibrated (vramscope): no calibration for rocm gfx1100: the built-in one is for "
        "gfx1151; mlxcel's estimate only (vramscope calibrate fits one from measured runs)"
    )
    _, out, _ = run(
        capsys, "inspect", LLAMA_4BIT, *ROCM_640, *GFX1151, "--calibration-engine", "torch"
    )
    assert "no calibration for rocm gfx1151 (torch);" in out.splitlines()[-1]
    _, out, _ = run(
        capsys, "inspect", LLAMA_4BIT, *ROCM_640, *GFX1151, "--calibration-engine", "MLX"
    )
    assert "18 runs on gfx1151" in out


def test_an_engine_that_is_none_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640, "--calibration-engine", "vllm")
    assert (code, out) == (2, "")
    assert err == (
        "vramscope: error: --calibration-engine: 'vllm' is not an engine "
        "(give torch, mlx, external)\n"
    )
