"""`vramscope inspect` end to end: the banner, JSON, flags, env and broken model folders."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from core.units import GIB, format_bytes
from tests.core.estimate.test_report import WORKED_EXAMPLE
from tests.core.helpers import (
    GFX1151_LIMIT,
    LLAMA_4BIT,
    MINIMAL_CONFIG,
    QWEN3_MOE_4BIT,
    QWEN25_4BIT,
    split_banner,
)
from tui.cli import main

ROCM_640 = ["--max-tokens", "640", "--backend", "rocm", "--memory-limit", str(GFX1151_LIMIT)]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_worked_example_through_the_cli(skeleton: Callable[..., Path], capsys, monkeypatch) -> None:
    folder = skeleton(LLAMA_4BIT, name="Meta-Llama-3.1-8B-Instruct-4bit")
    monkeypatch.chdir(folder.parent.parent)
    shown = f"{folder.parent.name}/{folder.name}"
    code, out, err = run(capsys, "inspect", shown, *ROCM_640)
    assert (code, err) == (0, "")
    banner, ours = split_banner(out)
    assert (
        banner == WORKED_EXAMPLE.replace("models/mlx/Meta-Llama-3.1-8B-Instruct-4bit", shown) + "\n"
    )
    # vramscope's lines after mlxcel's: which device, the largest context (capped at the
    # 131,072 tokens Llama 3.1 was trained for, where memory would allow 482,560).
    assert ours[0] == (
        "vramscope: Backend: rocm (--backend); available 82,463,372,083 bytes (--memory-limit)"
    )
    assert ours[1].startswith("vramscope: largest context that fits: 131,072 tokens, the trained")
    assert "memory allows 482,560" in ours[1]


@pytest.mark.parametrize(
    ("repo", "total"),
    [(LLAMA_4BIT, 6_653_428_633), (QWEN25_4BIT, 6_314_147_635), (QWEN3_MOE_4BIT, 21_790_966_527)],
)
@pytest.mark.parametrize("layout", ["headers", "index-only"])
def test_three_measured_models(skeleton, capsys, repo: str, total: int, layout: str) -> None:
    folder = skeleton(repo, layout)
    code, out, _ = run(capsys, "inspect", str(folder), *ROCM_640)
    assert code == 0
    assert f"({total} bytes)\n" in out
    assert "  Backend in-flight: 1.00 GiB (1073741824 bytes)  (MLX_ROCM_MAX_INFLIGHT_MB)\n" in out
    code, out, _ = run(capsys, "inspect", str(folder), *ROCM_640, "--json")
    data = json.loads(out)
    assert data["total_bytes"] == total
    assert data["backend_inflight_bytes"] == GIB
    assert data["model"] == str(folder)


def test_inflight_flag_beats_env_and_uses_the_same_parser(skeleton, capsys, monkeypatch) -> None:
    folder = str(skeleton(LLAMA_4BIT, "index-only"))
    monkeypatch.setenv("MLX_ROCM_MAX_INFLIGHT_MB", "4096")
    _, out, _ = run(capsys, "inspect", folder, *ROCM_640, "--json")
    assert json.loads(out)["backend_inflight_bytes"] == 4 * GIB
    _, out, _ = run(capsys, "inspect", folder, *ROCM_640, "--json", "--inflight-mb", "256")
    assert json.loads(out)["backend_inflight_bytes"] == 256 << 20
    code, out, err = run(capsys, "inspect", folder, *ROCM_640, "--inflight-mb", "1G")
    assert code == 0
    assert "Backend in-flight: 1.00 GiB" in out
    assert err.count("\n") == 1 and '--inflight-mb="1G"' in err
    _, out, _ = run(capsys, "inspect", folder, *ROCM_640, "--inflight-mb", "0")
    assert "Backend in-flight" not in out


def test_non_rocm_backends_ignore_the_budget(skeleton, capsys, monkeypatch) -> None:
    folder = str(skeleton(LLAMA_4BIT, "index-only"))
    monkeypatch.setenv("MLX_ROCM_MAX_INFLIGHT_MB", "4096")
    for backend in ("cuda", "metal", "cpu"):
        code, out, err = run(
            capsys,
            "inspect",
            folder,
            "-n",
            "640",
            "--backend",
            backend,
            "--memory-limit",
            "64GB",
            "--json",
        )
        data = json.loads(out)
        assert (code, err, data["backend_inflight_bytes"]) == (0, "", 0)
        assert data["total_bytes"] == 5_579_686_809


def test_env_knobs_and_their_warnings(skeleton, capsys, monkeypatch) -> None:
    folder = str(skeleton(LLAMA_4BIT, "index-only"))
    monkeypatch.setenv("MLXCEL_MEMORY_LIMIT", "512MB")
    monkeypatch.setenv("MLXCEL_HEADROOM_FACTOR", "1.5")
    _, out, _ = run(capsys, "inspect", folder, "-n", "640", "--backend", "cpu", "--json")
    data = json.loads(out)
    assert data["budget_bytes"] == 536_870_912 and data["fits"] is False
    assert data["headroom_factor"] == 1.5
    monkeypatch.setenv("MLXCEL_HEADROOM_FACTOR", "lots")
    monkeypatch.setenv("MLXCEL_ACTIVATION_MULT", "-1")
    code, out, err = run(capsys, "inspect", folder, "-n", "640", "--backend", "cpu")
    assert code == 0
    assert "factor 1.20x" in out
    assert err.count("\n") == 2
    assert 'MLXCEL_HEADROOM_FACTOR="lots"' in err and 'MLXCEL_ACTIVATION_MULT="-1"' in err
    banner, _ = split_banner(out)
    assert "DOES NOT FIT" in banner and banner.rstrip().endswith("unless `--force` is set.")


@pytest.mark.parametrize(
    ("factor", "backend"), [(None, "rocm"), ("1.5", "cpu"), ("1e10", "rocm"), ("0.5", "rocm")]
)
def test_allocator_overhead_bytes_is_the_banners_figure(
    skeleton, capsys, monkeypatch, factor: str | None, backend: str
) -> None:
    # 1e10 saturates O + A + I at 2^64 - 1: the banner then shows headroom - A - I, not O.
    if factor is not None:
        monkeypatch.setenv("MLXCEL_HEADROOM_FACTOR", factor)
    folder = str(skeleton(LLAMA_4BIT, "index-only"))
    flags = ["--max-tokens", "640", "--backend", backend, "--memory-limit", "64GB"]
    _, banner, _ = run(capsys, "inspect", folder, *flags)
    _, out, _ = run(capsys, "inspect", folder, *flags, "--json")
    data = json.loads(out)
    shown = data["allocator_overhead_bytes"]
    assert f"  Allocator ovhd:  {format_bytes(shown)}  (factor" in banner
    assert (
        shown == data["headroom_bytes"] - data["activation_bytes"] - data["backend_inflight_bytes"]
    )
    keys = list(data)
    assert keys[keys.index("headroom_bytes") + 1] == "allocator_overhead_bytes"


def test_memory_limit_flag_beats_env(skeleton, capsys, monkeypatch) -> None:
    folder = str(skeleton(LLAMA_4BIT, "index-only"))
    monkeypatch.setenv("MLXCEL_MEMORY_LIMIT", "512MB")
    _, out, _ = run(
        capsys, "inspect", folder, "--backend", "cpu", "--memory-limit", "1.5GB", "--json"
    )
    assert json.loads(out)["budget_bytes"] == 1_610_612_736


def test_defaults_match_mlxcel(skeleton, capsys) -> None:
    folder = str(skeleton(LLAMA_4BIT, "index-only"))
    _, out, _ = run(
        capsys, "inspect", folder, "--backend", "cpu", "--memory-limit", "64G", "--json"
    )
    assert json.loads(out)["inputs"] == {
        "max_tokens": 8192,
        "batch": 1,
        "kv_cache_mode": "fp16",
        "quant": "default",
    }
    _, out, _ = run(
        capsys,
        "inspect",
        folder,
        "--backend",
        "cpu",
        "--memory-limit",
        "64G",
        "--kv-cache-mode",
        "int8",
        "--quant",
        "I4",
        "--batch",
        "3",
        "--json",
    )
    data = json.loads(out)
    assert data["inputs"] == {
        "max_tokens": 8192,
        "batch": 3,
        "kv_cache_mode": "int8",
        "quant": "int4",
    }
    assert data["kv_bytes_total"] == 3 * 1_073_741_824 // 2


@pytest.mark.parametrize(
    ("argv", "fault"),
    [
        (["--batch", "0"], "--batch: must be at least 1"),
        (["--batch", "two"], "--batch: expected an integer"),
        (["--max-tokens", "-1"], "--max-tokens/-n: must not be negative, got '-1'"),
        (["--kv-cache-mode", "turbo4"], "--kv-cache-mode: invalid choice"),
        (["--quant", "turbo3"], "--quant: unknown value 'turbo3'"),
        (["--backend", "vulkan"], "--backend: invalid choice"),
        (["--memory-limit", "lots"], "--memory-limit: 'lots' is not a size"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    skeleton, capsys, argv: list[str], fault: str
) -> None:
    folder = str(skeleton(LLAMA_4BIT, "index-only"))
    try:
        code = main(["inspect", folder, *argv])  # VramscopeError paths return 2
    except SystemExit as exc:  # argparse paths exit 2
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and fault in err


def _st(header: bytes | dict, declared: int | None = None, pad: int = 0) -> bytes:
    body = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(body) if declared is None else declared
    return struct.pack("<Q", n) + body + b"\0" * pad


GOOD = {"w": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}}
MINIMAL = json.dumps(MINIMAL_CONFIG).encode()


def index_with(shard: str) -> bytes:
    return json.dumps({"metadata": {"total_size": 999}, "weight_map": {"w": shard}}).encode()


# (name, files, expected weights source text, stderr fragments)
BROKEN = [
    (
        "no config",
        {"model.safetensors": _st(GOOD, pad=64)},
        "safetensors header",
        ["config.json: not found"],
    ),
    (
        "config not JSON",
        {"config.json": b"{hidden_size: 1", "model.safetensors": _st(GOOD)},
        "safetensors header",
        ["config.json: config.json is not valid JSON"],
    ),
    (
        "config an array",
        {"config.json": b"[1, 2]"},
        "fallback (7 B params assumed)",
        ["config.json: top level is a JSON array"],
    ),
    (
        "config NaN",
        {"config.json": b'{"hidden_size": NaN}'},
        "fallback (7 B params assumed)",
        ["NaN is not valid JSON"],
    ),
    (
        "config not UTF-8",
        {"config.json": b'{"a": "\xff"}'},
        "fallback (7 B params assumed)",
        ["not valid UTF-8"],
    ),
    (
        "header length 0",
        {"config.json": MINIMAL, "model.safetensors": _st(b"", 0)},
        "analytical estimate from config.json",
        ["model.safetensors: header length is 0"],
    ),
    (
        "header over cap",
        {"config.json": MINIMAL, "model.safetensors": _st(b"{}", 1 << 29)},
        "analytical estimate from config.json",
        ["over the 268435456-byte cap"],
    ),
    (
        "header past EOF",
        {"config.json": MINIMAL, "model.safetensors": _st(b"{}", 4096)},
        "analytical estimate from config.json",
        ["header length 4096 runs past the end of the file"],
    ),
    (
        "file shorter than 8 bytes",
        {"config.json": MINIMAL, "model.safetensors": b"\x01\x02"},
        "analytical estimate from config.json",
        ["shorter than the 8-byte header length"],
    ),
    (
        "header not JSON",
        {"config.json": MINIMAL, "model.safetensors": _st(b"not json")},
        "analytical estimate from config.json",
        ["model.safetensors: header is not valid JSON"],
    ),
    (
        "unknown dtype",
        {"config.json": MINIMAL, "model.safetensors": _st({"w": {"dtype": "Q4_K", "shape": [2]}})},
        "analytical estimate from config.json",
        ["unknown dtype 'Q4_K'"],
    ),
    (
        "non-integer dims",
        {
            "config.json": MINIMAL,
            "model.safetensors": _st({"w": {"dtype": "F32", "shape": [2, 1.5]}}),
        },
        "analytical estimate from config.json",
        ["non-integer dimension 1.5"],
    ),
    (
        "shard with ..",
        {"config.json": MINIMAL, "model.safetensors.index.json": index_with("../x.safetensors")},
        "analytical estimate from config.json",
        ["shard name '../x.safetensors' is not a plain file name"],
    ),
    (
        "absolute shard",
        {"config.json": MINIMAL, "model.safetensors.index.json": index_with("/etc/passwd")},
        "analytical estimate from config.json",
        ["shard name '/etc/passwd' is not a plain"],
    ),
    (
        "NUL in shard",
        {"config.json": MINIMAL, "model.safetensors.index.json": index_with("a\x00.safetensors")},
        "analytical estimate from config.json",
        ["is not a plain file name"],
    ),
    (
        "shard in sub-folder",
        {"config.json": MINIMAL, "model.safetensors.index.json": index_with("sub/a.safetensors")},
        "analytical estimate from config.json",
        ["'sub/a.safetensors' is not a plain file name"],
    ),
    (
        "index not JSON",
        {
            "config.json": MINIMAL,
            "model.safetensors.index.json": b"{",
            "model.safetensors": _st(GOOD),
        },
        "safetensors header",
        ["model.safetensors.index.json is not valid JSON"],
    ),
]


@pytest.mark.parametrize(("name", "files", "source", "faults"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_model_folders_fall_back_with_one_warning_each(
    tmp_path: Path, capsys, name: str, files: dict[str, bytes], source: str, faults: list[str]
) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    for fname, data in files.items():
        (folder / fname).write_bytes(data)
    code, out, err = run(
        capsys, "inspect", str(folder), "--backend", "cpu", "--memory-limit", "64GB"
    )
    assert code == 0, err
    assert f"({source})\n" in out
    lines = err.splitlines()
    assert len(lines) == len(faults)
    for line, fault in zip(lines, faults, strict=True):
        assert line.startswith("vramscope: warning: ")
        assert fault in line
        assert str(folder) in line  # names the file at fault


def test_model_safetensors_that_is_a_folder_or_fifo_never_hangs(tmp_path: Path, capsys) -> None:
    for kind in ("dir", "fifo"):
        folder = tmp_path / kind
        folder.mkdir()
        (folder / "config.json").write_bytes(MINIMAL)
        target = folder / "model.safetensors"
        if kind == "dir":
            target.mkdir()
        else:
            os.mkfifo(target)
        code, out, err = run(
            capsys, "inspect", str(folder), "--backend", "cpu", "--memory-limit", "64GB"
        )
        assert code == 0
        assert "(analytical estimate from config.json)" in out
        why = "is a directory" if kind == "dir" else "is not a regular file"
        assert f"model.safetensors: {why}" in err


@pytest.mark.parametrize(
    ("name", "size", "cap"),
    [
        ("config.json", 17 << 20, "16,777,216"),
        ("model.safetensors.index.json", 65 << 20, "67,108,864"),
    ],
)
def test_an_oversized_config_or_index_is_refused_not_answered_by_a_fallback(
    tmp_path: Path, capsys, name: str, size: int, cap: str
) -> None:
    # mlxcel reads any size: a fallback here would FIT a model mlxcel says does not
    # (a 1,000,000-layer config: 3.79 TB to mlxcel, 15.65 GiB to the 7 B fallback).
    folder = tmp_path / "huge"
    folder.mkdir()
    if name != "config.json":
        (folder / "config.json").write_bytes(MINIMAL)
    with open(folder / name, "wb") as fh:
        fh.truncate(size)  # sparse: no disk cost
    code, out, err = run(capsys, "inspect", str(folder), "--backend", "cpu", "--memory-limit", "1G")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert f"{folder}: {name} is {size:,} bytes, over vramscope's {cap}-byte limit" in err
    # The catalog lists the folder as skipped, with the same reason.
    code, out, _ = run(capsys, "models", "--models-dir", str(tmp_path), "--verbose")
    assert code == 0
    assert f"{folder}: {name} is {size:,} bytes" in out


def test_symlink_loop_falls_back(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "loop"
    folder.mkdir()
    os.symlink("model.safetensors", folder / "model.safetensors")
    (folder / "config.json").write_bytes(b"{}")
    code, out, _err = run(
        capsys, "inspect", str(folder), "--backend", "cpu", "--memory-limit", "1G"
    )
    assert code == 0
    assert "(fallback (7 B params assumed))" in out


def test_unreadable_file_falls_back(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "config.json").write_bytes(MINIMAL)
    locked = folder / "model.safetensors"
    locked.write_bytes(_st(GOOD))
    locked.chmod(0)
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode; see the subprocess test below")
    code, _, err = run(capsys, "inspect", str(folder), "--backend", "cpu", "--memory-limit", "1G")
    assert code == 0
    assert "permission denied" in err.lower()


@pytest.mark.skipif(os.geteuid() != 0, reason="drops privileges to nobody, needs root")
def test_unreadable_file_as_an_unprivileged_user(tmp_path: Path) -> None:
    base = Path("/tmp") / f"vramscope-perm-{os.getpid()}"
    folder = base / "m"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        base.chmod(0o755)
        folder.chmod(0o755)
        (folder / "config.json").write_bytes(MINIMAL)
        (folder / "config.json").chmod(0o644)
        locked = folder / "model.safetensors"
        locked.write_bytes(_st(GOOD))
        locked.chmod(0o600)
        # Import everything first (the interpreter lives under /root), then drop to nobody.
        code = (
            "import os, sys, encodings.idna, tui.cli, tui.commands.inspect, core.catalog.resolve, "
            "core.estimate.report; tui.cli.build_parser(); os.setgid(65534); os.setuid(65534); "
            "sys.exit(tui.cli.main(sys.argv[1:]))"
        )
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                "inspect",
                str(folder),
                "--backend",
                "cpu",
                "--memory-limit",
                "1G",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        )
        assert proc.returncode == 0, proc.stderr
        assert "(analytical estimate from config.json)" in proc.stdout
        assert "model.safetensors: permission denied" in proc.stderr
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_model_that_is_not_a_folder_is_an_error(tmp_path: Path, capsys, kind: str) -> None:
    target = tmp_path / "x"
    if kind == "file":
        target.write_text("{}")
    code, out, err = run(capsys, "inspect", str(target))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"vramscope: error: {target}")


def test_builtin_profile_names_work_offline(capsys) -> None:
    code, out, _ = run(capsys, "inspect", LLAMA_4BIT, *ROCM_640)
    assert code == 0
    assert WORKED_EXAMPLE.replace("models/mlx/", "mlx-community/") + "\n" == split_banner(out)[0]


def test_console_script_in_a_subprocess(skeleton) -> None:
    folder = str(skeleton(QWEN25_4BIT, "index-only"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLX", "VRAMSCOPE"))}
    proc = subprocess.run(
        [sys.executable, "-m", "tui", "inspect", folder, *ROCM_640, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["total_bytes"] == 6_314_147_635
    proc = subprocess.run(
        [sys.executable, "-m", "tui", "inspect", "--batch", "x", folder],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_a_script_can_branch_on_inspect_check(tmp_path: Path) -> None:
    # As a user's shell script would: `if vramscope inspect MODEL --check; then ...`.
    script = tmp_path / "fits.sh"
    script.write_text(
        'if "$PYTHON" -m tui inspect "$MODEL" --memory-limit "$LIMIT" --check > /dev/null\n'
        "then echo fits; else echo 'does not fit'; fi\n"
    )
    root = Path(__file__).resolve().parents[3]
    for limit, expected in (("64GB", "fits"), ("4GB", "does not fit")):
        env = {**os.environ, "PYTHON": sys.executable, "LIMIT": limit}
        env["MODEL"] = "mlx-community/Qwen3-30B-A3B-4bit"
        out = subprocess.run(
            ["sh", str(script)], cwd=root, env=env, capture_output=True, text=True, timeout=60
        )
        assert out.stdout.strip() == expected, out.stderr


@pytest.mark.parametrize(("limit", "code"), [("64GB", 0), ("4GB", 1)])
def test_inspect_check_keeps_the_output_and_sets_the_exit_code(
    capsys, limit: str, code: int
) -> None:
    argv = ["inspect", "mlx-community/Qwen3-30B-A3B-4bit", "--memory-limit", limit]
    plain = run(capsys, *argv)
    checked = run(capsys, *argv, "--check")
    assert plain[0] == 0 and checked[0] == code
    assert checked[1:] == plain[1:]  # banner and warnings byte-identical
    tp = run(capsys, *argv[:2], "--tp", "2", "--memory-limit", limit, "--check")
    assert tp[0] == code


@pytest.mark.parametrize(
    ("value", "weights", "said"),
    [
        ("-1", 0, "the analytical weight count reads hidden_size as a number, as mlxcel does: "
         "weights 0 bytes"),
        ('"x"', 14_000_000_000, 'read as absent (as mlxcel does): hidden_size ("x")'),
    ],
)  # fmt: skip
def test_a_mistyped_hidden_size_warning_says_what_the_weights_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, weights: int, said: str
) -> None:
    """mlxcel's typed lookups skip `-1` as absent, its analytical count reads it as -1.0
    (0 bytes); a string is absent to both (the 7 B fallback). The warning says which."""
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(
        f'{{"model_type": "llama", "hidden_size": {value}, "num_hidden_layers": 2}}'
    )
    assert main(["inspect", str(model), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["weights_bytes"] == weights
    assert err.count("\n") == 1 and said in err
