"""The wheel as a user gets it: built from this tree, installed into a fresh venv with only
its own dependencies (no torch, no mlx, no test tools), it answers from its built-in
profiles and draws the explorer.

The cheapest faithful way: `pip wheel --no-deps` (hatchling, as `make` builds), a venv
made `--without-pip` (no site-packages of this one, so nothing leaks in from the
editable install) and this venv's pip installing into it with `--python`, from the same
sources and constraints as `make run` (here the local indexes and the warm pip cache):
about 15 s on two cores, where `ensurepip` and a second pip would add seconds more.
The install skips pip's byte-compiling of every installed module (`--no-compile`: 5 s of
processor time of the fixture's 13): what the tests run is compiled when imported, as
any module without bytecode is, and the files installed are the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tui.cli import main

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "mlx-community/Qwen3-30B-A3B-4bit"
FIXED = ["--memory-limit", "32768"]  # the machine's free memory moves between two runs

pytestmark = [pytest.mark.slow, pytest.mark.child_process]


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(the wheel, the fresh venv's bin folder, an environment without this tree)."""
    work = tmp_path_factory.mktemp("wheel")
    # Built before the per-test environment is cleaned (a module fixture): clean it here.
    skip = ("PYTHON", "VIRTUAL_ENV", "HF_", "MLXCEL_", "MLX_", "VRAMSCOPE_", "NO_COLOR")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env |= {"HOME": str(work / "home"), "XDG_CACHE_HOME": str(work / "cache")}
    env |= {"HF_HOME": str(work / "hf"), "HF_HUB_OFFLINE": "1"}
    env |= {"XDG_STATE_HOME": str(work / "state"), "XDG_CONFIG_HOME": str(work / "config")}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    built = run([*pip, "wheel", "--no-deps", "-w", str(work / "dist"), str(ROOT)], work, env)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (work / "dist").glob("vramscope-*.whl")
    made = run([sys.executable, "-m", "venv", "--without-pip", str(work / "venv")], work, env)
    assert made.returncode == 0, made.stderr
    bin_dir = work / "venv" / "bin"
    constraints = str(ROOT / "requirements" / "constraints.txt")
    pip_in = [
        *pip,
        "--python",
        str(bin_dir / "python"),
        "install",
        "--no-compile",
        "-c",
        constraints,
    ]
    done = run([*pip_in, str(wheel)], work, env)
    assert done.returncode == 0, done.stderr[-2000:]
    return wheel, bin_dir, env


def test_the_wheel_carries_the_profiles_calibration_and_stylesheet(
    installed: tuple[Path, Path, dict[str, str]],
) -> None:
    wheel, _, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("core/catalog/profile_data/") and n.endswith(".json.xz") for n in names)
    assert "core/calibration/data/gfx1151_rocm.csv" in names
    assert "tui/app.tcss" in names
    assert "tui/after_first_frame.tcss" in names
    assert not any(n.startswith("tests/") for n in names)


def test_the_fresh_install_holds_the_explorer_s_needs_and_no_engine(
    installed: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    _, bin_dir, env = installed
    code = (
        "import importlib.util as u; "
        "print(*[n for n in ('textual', 'rich', 'safetensors', 'huggingface_hub', "
        "'platformdirs', 'gguf', 'torch', 'mlx', 'mlx_lm', 'numpy', 'pytest', 'mypy') "
        "if u.find_spec(n)])"
    )
    found = run([str(bin_dir / "python"), "-c", code], tmp_path, env)
    assert found.stdout.split() == [
        "textual",
        "rich",
        "safetensors",
        "huggingface_hub",
        "platformdirs",
        "gguf",
        "numpy",  # gguf's own dependency, imported only when a GGUF is read
    ]


def test_inspect_from_the_wheel_gives_the_same_answer_as_this_tree(
    installed: tuple[Path, Path, dict[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, bin_dir, env = installed
    done = run([str(bin_dir / "vramscope"), "inspect", PROFILE, "--json", *FIXED], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert main(["inspect", PROFILE, "--json", *FIXED]) == 0
    assert json.loads(done.stdout) == json.loads(capsys.readouterr().out)


def test_inspect_of_a_gguf_from_the_wheel_gives_the_same_answer_as_this_tree(
    installed: tuple[Path, Path, dict[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.gguf_models import write_model

    _, bin_dir, env = installed
    (path,) = write_model(tmp_path, "qwen3moe", weight_type="Q4_0")
    done = run(
        [str(bin_dir / "vramscope"), "inspect", str(path), "--json", "--memory-limit", "16GiB"],
        tmp_path,
        env,
    )
    assert done.returncode == 0, done.stderr
    assert main(["inspect", str(path), "--json", "--memory-limit", "16GiB"]) == 0
    assert json.loads(done.stdout) == json.loads(capsys.readouterr().out)


def test_screenshot_from_the_wheel_draws_the_explorer(
    installed: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    _, bin_dir, env = installed
    done = run([str(bin_dir / "vramscope"), "screenshot", "out.svg"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    svg = (tmp_path / "out.svg").read_text()
    assert svg.startswith("<svg")
    assert "Total" in svg


def test_measure_from_the_wheel_names_the_extra_to_install(
    installed: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    _, bin_dir, env = installed
    done = run([str(bin_dir / "vramscope"), "measure", PROFILE], tmp_path, env)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "vramscope: error: measurement failed (torch is not installed): torch not found by "
        f"{bin_dir / 'python'}; install the torch engine with: pip install 'vramscope[measure]'"
    ]
