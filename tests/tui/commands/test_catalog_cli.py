"""`vramscope models` and model names on the command line, end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.catalog.profiles import list_profile_ids, load_profile
from tests.core.catalog.catalog_fixtures import HubCache, write_tiny_model
from tests.model_writers import write_skeleton
from tui.cli import main

ROOT = Path(__file__).resolve().parents[3]
LLAMA_4BIT = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"

# Runs the CLI with every socket connection refused: any network use would fail loudly.
NO_NETWORK = """
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network access attempted")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from tui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_NETWORK, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def fresh_machine(tmp_path: Path) -> dict[str, str]:
    """No HF cache, no models dirs, an empty home: a machine that has never seen a model."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "HUGGINGFACE_", "VRAMSCOPE_", "MLX", "XDG_"))
    }
    env.update(HOME=str(home), HF_HUB_OFFLINE="1")
    return env


@pytest.fixture
def quiet_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """In-process runs: the HF cache points at an empty folder of this test."""
    cache = tmp_path / "hf-hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("VRAMSCOPE_MODELS_DIR", raising=False)
    return cache


def test_issue_command_works_offline_and_matches_the_header_only_folder(
    fresh_machine: dict[str, str], tmp_path: Path
) -> None:
    args = ["--max-tokens", "640", "--backend", "rocm"]
    by_name = run_cli("inspect", LLAMA_4BIT, *args, env=fresh_machine)
    assert (by_name.returncode, by_name.stderr) == (0, "")
    assert (
        "  Weights:         4.21 GiB (4517404672 bytes)  (safetensors header)\n" in by_name.stdout
    )
    folder = write_skeleton(load_profile(LLAMA_4BIT), tmp_path / "Meta-Llama-3.1-8B-Instruct-4bit")
    by_path = run_cli("inspect", str(folder), *args, env=fresh_machine)
    assert by_path.returncode == 0
    # Same bytes, the `Model:` line aside (it shows MODEL as typed); memory is probed
    # per run, so pin it for the comparison.
    pinned = dict(fresh_machine, MLXCEL_MEMORY_LIMIT="82463372083")
    a = run_cli("inspect", LLAMA_4BIT, *args, env=pinned).stdout
    b = run_cli("inspect", str(folder), *args, env=pinned).stdout
    assert a == b.replace(str(folder), LLAMA_4BIT)


def test_models_lists_the_builtin_profiles_on_a_fresh_machine(
    fresh_machine: dict[str, str],
) -> None:
    result = run_cli("models", env=fresh_machine)
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "NAME", "FORMAT", "WEIGHTS", "SIZE", "FROM", "KV", "CONTEXT", "ON", "DISK", "WHERE",
    ]  # fmt: skip
    row = next(line for line in lines if line.startswith(LLAMA_4BIT + " "))
    assert row.split() == [
        LLAMA_4BIT, "MLX", "4-bit", "g64", "4.21", "GiB", "header", "standard", "attention",
        "131072", "no", "built-in", "profile",
    ]  # fmt: skip
    count = len(list_profile_ids())
    assert lines[-1].startswith(f"{count} models: {count} built-in, 0 in the HF cache (")
    assert lines[-1].endswith(": not found), 0 in folders")


def test_models_json_and_verbose(
    quiet_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = HubCache(quiet_env)
    cache.add_tiny("org/tiny")
    cache.add_files("org/readme", {"README.md": b"x"})
    write_tiny_model(tmp_path / "mine" / "finetune")
    assert main(["models", "--json", "--models-dir", str(tmp_path / "mine")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hf_cache_dir"] == str(quiet_env)
    assert data["models_dirs"] == [str(tmp_path / "mine")]
    models = {m["name"]: m for m in data["models"]}
    assert models["org/tiny"]["origin"] == "hf-cache"
    assert models["org/tiny"]["weights_on_disk"] is True
    assert models["org/tiny"]["refs"] == ["main"]
    assert models["finetune"]["path"] == str(tmp_path / "mine" / "finetune")
    assert models[LLAMA_4BIT]["weight_bytes"] == 4_517_404_672
    assert models[LLAMA_4BIT]["weights_source"] == "safetensors_header"
    assert [s["name"] for s in data["skipped"]] == ["org/readme"]

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("1 skipped (--verbose: why)")
    assert main(["models", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "Skipped:\n" in out
    assert "/models--org--readme/snapshots/" in out
    assert ": not a model folder (no config.json, no *.safetensors): it holds README.md\n" in out


def test_models_dir_flag_repeats_and_env_adds_to_it(
    quiet_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("a", "b", "c"):
        write_tiny_model(tmp_path / name / f"model-{name}")
    monkeypatch.setenv("VRAMSCOPE_MODELS_DIR", str(tmp_path / "c"))
    argv = ["models", "--json", "--models-dir", str(tmp_path / "a"), "--models-dir"]
    assert main([*argv, str(tmp_path / "b")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["models_dirs"] == [str(tmp_path / n) for n in "abc"]
    folders = [m["name"] for m in data["models"] if m["origin"] == "folder"]
    assert folders == ["model-a", "model-b", "model-c"]
    # The same names work for inspect, with the same flags.
    assert main(["inspect", "model-b", "--models-dir", str(tmp_path / "b")]) == 0
    assert "  Model:           model-b\n" in capsys.readouterr().out


def test_bad_names_are_one_line_errors_with_exit_2(
    quiet_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "mlx-community/Qwen3-30B-A3B"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("vramscope: error: mlx-community/Qwen3-30B-A3B: no such model: ")
    assert "; closest: " in err and "mlx-community/Qwen3-30B-A3B-4bit" in err


def test_models_survives_a_broken_models_dir(
    quiet_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """VRAMSCOPE_MODELS_DIR, set once for every run, is skipped with its reason; the
    flag, typed for this run, is refused before any work (as by `fit` and `inspect`)."""
    (tmp_path / "file").write_text("x")
    os.environ["VRAMSCOPE_MODELS_DIR"] = str(tmp_path / "file")
    try:
        assert main(["models", "-v"]) == 0
    finally:
        del os.environ["VRAMSCOPE_MODELS_DIR"]
    out = capsys.readouterr().out
    assert f"  {tmp_path / 'file'}: models folder: not a folder\n" in out
    for command in ("models", "fit", "inspect"):
        with pytest.raises(SystemExit) as stop:
            main([command, "--models-dir", str(tmp_path / "missing")])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--models-dir" in err and "no such folder" in err
