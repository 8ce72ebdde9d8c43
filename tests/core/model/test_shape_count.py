"""vramscope's own weights count from config shapes (core/model/shape_count.py) and the
one warning line where mlxcel's analytical fallback is far from it.

The configs in tests/core/estimate/data are real config.json files; a folder
holding only one of them forces mlxcel's analytical fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.catalog.model_dir import read_model_dir
from core.catalog.profiles import list_profile_ids, load_profile
from core.estimate.snapshot import ModelSnapshot
from core.estimate.weights import WeightsSource, weights_from_config
from core.model.config import ModelConfig
from core.model.shape_count import analytical_warning, count_from_shapes
from core.units import format_bytes
from tui.cli import main

DATA = Path(__file__).parents[1] / "estimate" / "data"
QWEN3_NEXT = "Qwen__Qwen3-Next-80B-A3B-Instruct"
QWEN3_MOE = "Qwen__Qwen3-30B-A3B"
QWEN3_MOE_4BIT = "mlx-community__Qwen3-30B-A3B-4bit"
LLAMA = "meta-llama__Llama-3.1-8B-Instruct"
LLAMA_4BIT = "mlx-community__Meta-Llama-3.1-8B-Instruct-4bit"
MISTRAL = "mistralai__Mistral-7B-Instruct-v0.1"


def config_only(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_bytes((DATA / f"{name}.config.json").read_bytes())
    return folder


def analytical(tmp_path: Path, name: str) -> ModelSnapshot:
    snapshot = read_model_dir(config_only(tmp_path, name))
    assert snapshot.weights.source is WeightsSource.ANALYTICAL_CONFIG
    return snapshot


@pytest.mark.parametrize("repo", list_profile_ids())
def test_the_count_is_within_1_percent_of_every_profiles_real_tensors(repo: str) -> None:
    # Each built-in profile carries its checkpoint's real tensor list; gemma-3-4b-it's
    # SigLIP vision tower (and the 4-bit's) is not counted from text shapes.
    profile = load_profile(repo)
    count = count_from_shapes(profile.config)
    assert count is not None and profile.weight_bytes is not None
    tolerance = 0.16 if "gemma-3" in repo else 0.01
    assert abs(count.bytes - profile.weight_bytes) <= tolerance * profile.weight_bytes


@pytest.mark.parametrize(
    ("name", "mlxcel", "own", "ratio"),
    [
        (QWEN3_NEXT, "1442.27 GiB", "147.22 GiB", "9.80x"),
        (QWEN3_MOE, "434.27 GiB", "56.87 GiB", "7.64x"),
        (QWEN3_MOE_4BIT, "434.27 GiB", "16.00 GiB", "27.15x"),
        (LLAMA_4BIT, "13.98 GiB", "4.21 GiB", "3.32x"),
    ],
)
def test_a_far_off_analytical_count_keeps_mlxcels_bytes_and_warns_once(
    tmp_path: Path, name: str, mlxcel: str, own: str, ratio: str
) -> None:
    snapshot = analytical(tmp_path, name)
    config = snapshot.config
    assert config is not None
    assert snapshot.weights.bytes == weights_from_config(config).bytes  # mlxcel's, kept
    (line,) = [w for w in snapshot.warnings if "analytical count" in w]
    count = count_from_shapes(config)
    assert count is not None
    assert format_bytes(snapshot.weights.bytes) in line and mlxcel in line
    assert format_bytes(count.bytes) in line and own in line
    assert f": {ratio}" in line


@pytest.mark.parametrize("name", [LLAMA, MISTRAL])
def test_a_dense_unquantized_config_gets_no_warning(tmp_path: Path, name: str) -> None:
    assert analytical(tmp_path, name).warnings == ()


def test_the_line_names_what_mlxcel_missed(tmp_path: Path) -> None:
    moe = analytical(tmp_path, QWEN3_MOE_4BIT).warnings[0]
    assert "(128 experts, 4-bit)" in moe
    assert moe.endswith("(mlxcel counts every expert at intermediate_size and 2 bytes a parameter)")
    dense = analytical(tmp_path, LLAMA_4BIT).warnings[0]
    assert "(dense, 4-bit)" in dense and dense.endswith("(mlxcel counts 2 bytes a parameter)")


def test_at_most_25_percent_apart_is_no_warning() -> None:
    config = ModelConfig.from_dict(json.loads((DATA / f"{LLAMA}.config.json").read_text()))
    count = count_from_shapes(config)
    assert count is not None
    assert analytical_warning(config, count.bytes * 125 // 100) is None
    assert analytical_warning(config, count.bytes * 75 // 100) is None
    assert analytical_warning(config, count.bytes * 126 // 100) is not None
    assert analytical_warning(config, count.bytes * 74 // 100) is not None


def test_headers_on_disk_are_never_second_guessed(tmp_path: Path) -> None:
    # Only the analytical fallback is compared; a profile's real bytes get no line.
    profile = load_profile("Qwen/Qwen3-Next-80B-A3B-Instruct")
    from core.catalog.profiles import profile_snapshot

    assert not [w for w in profile_snapshot(profile).warnings if "analytical" in w]


def test_inspect_prints_the_line_on_stderr_and_mlxcels_banner_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = config_only(tmp_path, QWEN3_NEXT)
    code = main(["inspect", str(folder), "--backend", "cpu", "--memory-limit", "64GB"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "  Weights:         1442.27 GiB (1548622888960 bytes)  (analytical" in out
    assert err.count("\n") == 1
    assert err.startswith("vramscope: warning: weights: mlxcel's analytical count from")
    assert "1442.27 GiB (1548622888960 bytes)" in err and "147.22 GiB (158078668800 bytes)" in err
    main(["inspect", str(folder), "--backend", "cpu", "--memory-limit", "64GB", "--json"])
    out, _ = capsys.readouterr()
    assert json.loads(out)["weights_bytes"] == 1_548_622_888_960


def test_inspect_of_a_dense_config_only_folder_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = config_only(tmp_path, LLAMA)
    code = main(["inspect", str(folder), "--backend", "cpu", "--memory-limit", "64GB"])
    assert (code, capsys.readouterr().err) == (0, "")
