"""A folder that is no model is refused in one line, exit 2, `--check` included (#38).

Before: `inspect EMPTYDIR --check` printed mlxcel's 7 B fallback, FITS and "any context
(4,294,967,296 tokens)", and exited 0. mlxcel answers any folder; vramscope answers
only a folder with a config.json or safetensors weights (a config alone keeps
mlxcel's analytical answer).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CONFIG = {
    "model_type": "llama",
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 8192,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}


def vramscope(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLX", "VRAMSCOPE"))}
    return subprocess.run(
        [sys.executable, "-m", "tui", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )


def folder(tmp_path: Path, *files: str) -> Path:
    path = tmp_path / "model"
    path.mkdir()
    for name in files:
        (path / name).write_bytes(b"GGUF\x03\x00\x00\x00" if name.endswith(".gguf") else b"x")
    return path


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ((), "not a model folder (no config.json, no *.safetensors): it is empty"),
        (
            ("README.md", "a.bin", "b.bin", "c.bin"),
            "not a model folder (no config.json, no *.safetensors): it holds README.md, "
            "a.bin, b.bin and 1 more",
        ),
    ],
)
@pytest.mark.parametrize("flags", [("--check",), ("--json",), ()])
def test_inspect_refuses_a_folder_that_is_no_model(
    tmp_path: Path, files: tuple[str, ...], why: str, flags: tuple[str, ...]
) -> None:
    path = folder(tmp_path, *files)
    proc = vramscope("inspect", str(path), "--preset", "gfx1151", *flags)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"vramscope: error: {path}: {why}\n"


def test_a_file_name_cannot_paint_the_terminal(tmp_path: Path) -> None:
    path = folder(tmp_path, "\x1b[2Jwipe.bin")
    proc = vramscope("inspect", str(path), "--check", "--preset", "gfx1151")
    assert proc.returncode == 2 and "\x1b" not in proc.stderr
    assert "it holds [2Jwipe.bin\n" in proc.stderr


def test_inspect_check_of_a_gguf_folder_claims_no_verdict(tmp_path: Path) -> None:
    # `inspect` reads GGUF itself (docs/gguf.md) and, until llama.cpp's load is joined
    # in, gives --check no verdict: never mlxcel's fallback that fits any context.
    path = folder(tmp_path, "model.Q4_K_M.gguf")
    proc = vramscope("inspect", str(path), "--check", "--preset", "gfx1151")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.count("\n") == 1 and "FITS" not in proc.stderr


def test_a_config_alone_keeps_mlxcels_analytical_answer(tmp_path: Path) -> None:
    path = folder(tmp_path)
    (path / "config.json").write_text(json.dumps(CONFIG))
    proc = vramscope("inspect", str(path), "--check", "--preset", "gfx1151", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["weights_source"] == "analytical_config"
    assert report["largest_context"]["tokens"] == 131072


def test_measure_refuses_a_gguf_folder_before_any_child_starts(tmp_path: Path) -> None:
    path = folder(tmp_path, "model.gguf", "README.md")
    proc = vramscope("measure", str(path), "--no-history")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"vramscope: error: {path}: GGUF files only (model.gguf): `vramscope inspect` reads "
        "them (a file, the folder, or REPO:QUANT; docs/gguf.md); the rest of vramscope "
        "reads safetensors models with a config.json\n"
    )
