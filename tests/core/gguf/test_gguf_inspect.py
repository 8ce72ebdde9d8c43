"""`vramscope inspect` on GGUF models as a user runs it: a file, a split part, a folder;
what was read in text and JSON, and each bad file a one-line error with exit 2."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from tests.gguf_models import gguf_layout, write_gguf, write_mmproj, write_model
from tui.cli import main


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["inspect", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_gguf_file_reports_what_was_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (path,) = write_model(tmp_path, "gemma3", weight_type="Q4_0")
    write_mmproj(tmp_path / "mmproj-gemma3-F16.gguf")
    code, out, err = inspect(capsys, str(path), "--json")
    assert code == 0, err
    report = json.loads(out)
    layout = gguf_layout("gemma3", weight_type="Q4_0")
    assert report["architecture"] == "gemma3"
    assert report["weights_bytes"] == layout.weights_bytes
    assert report["tensor_count"] == len(layout.tensors)
    assert report["context_length"] == 4096
    assert report["files"] == [{"path": str(path), "size_bytes": path.stat().st_size}]
    assert report["projector"]["path"] == str(tmp_path / "mmproj-gemma3-F16.gguf")
    assert sum(report["tensor_bytes_by_type"].values()) == layout.weights_bytes
    assert report["load"]["engine"] == "llama.cpp"  # llama.cpp's load beside the reading
    code, text, _ = inspect(capsys, str(path))
    assert code == 0
    assert (
        f"  Weights:       {layout.weights_bytes // 1024}." in text
        or str(f"{layout.weights_bytes:,} bytes") in text
    )
    assert "  Architecture:  gemma3 (general.architecture)" in text.splitlines()


def test_a_split_part_and_a_folder_read_the_whole_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = gguf_layout("qwen2", weight_type="Q8_0")
    parts = write_gguf(tmp_path / "qwen2-Q8_0.gguf", layout, split=2)
    for name in (str(parts[1]), str(tmp_path)):
        code, out, err = inspect(capsys, name, "--json")
        assert code == 0, err
        report = json.loads(out)
        assert report["split_count"] == 2
        assert report["weights_bytes"] == layout.weights_bytes
        assert [f["path"] for f in report["files"]] == [str(p) for p in parts]


def test_an_unknown_architecture_is_read_and_shown_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import replace

    layout = replace(gguf_layout("llama"), arch="mystery\x1b[31m")
    (path,) = write_gguf(tmp_path / "m.gguf", layout)
    code, out, _ = inspect(capsys, str(path))
    assert code == 0
    assert "  Architecture:  mystery[31m (general.architecture)" in out.splitlines()
    assert "\x1b" not in out


@pytest.mark.parametrize(
    ("damage", "fault"),
    [
        (lambda b: b[:100], "truncated or corrupt GGUF header: metadata count 20 cannot fit"),
        (lambda b: b[:8] + struct.pack("<Q", 2**60) + b[16:], "truncated or corrupt GGUF header"),
    ],
)
def test_a_bad_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage, fault: str
) -> None:
    (path,) = write_model(tmp_path, "llama")
    path.write_bytes(damage(path.read_bytes()))
    code, out, err = inspect(capsys, str(path))
    assert code == 2
    assert out == ""
    lines = [line for line in err.splitlines() if not line.startswith("vramscope: note:")]
    assert len(lines) == 1
    assert lines[0].startswith(f"vramscope: error: {path}: {fault}")


def test_a_missing_split_part_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parts = write_gguf(tmp_path / "m.gguf", gguf_layout("llama"), split=3)
    os.remove(parts[2])
    code, _, err = inspect(capsys, str(parts[0]))
    assert code == 2
    assert err.splitlines()[-1] == (
        f"vramscope: error: {parts[2]}: part 3 of 3 of the split model is missing"
    )


def test_a_folder_of_safetensors_is_not_taken_for_gguf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config.json").write_text("{}")
    write_model(tmp_path, "llama")
    code, out, err = inspect(capsys, str(tmp_path), "--json")
    assert code == 0, err
    report = json.loads(out)
    # Read as the safetensors folder its config.json makes it: mlxcel's 7 B fallback.
    assert "format" not in report
    assert report["weights_bytes"] == 14_000_000_000


@pytest.mark.parametrize(
    ("flags", "flag"), [(["--tp", "2"], "--tp/--pp"), (["--calibrated"], "--calibrated")]
)
def test_flags_with_no_meaning_yet_for_gguf_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], flag: str
) -> None:
    (path,) = write_model(tmp_path, "llama")
    code, out, err = inspect(capsys, str(path), *flags)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].startswith(f"vramscope: error: {flag}: ")


def test_repo_quant_downloaded_by_llama_cpp_is_read_from_the_hf_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`llama-server -hf org/repo:Q4_0` leaves the file in the HF cache: inspect reads it
    there, offline, as it reads the same file on disk."""
    from tests.model_writers import write_cache_file, write_ref

    cache = tmp_path / "hf" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    repo = cache / "models--test-org--Tiny-GGUF"
    commit = "a" * 40
    written = tmp_path / "written"
    parts = write_gguf(
        written / "tiny-Q4_0.gguf", gguf_layout("qwen3", weight_type="Q4_0"), split=2
    )
    for part in parts:
        write_cache_file(repo, commit, f"Q4_0/{part.name}", from_file=part)
    write_ref(repo, "main", commit)
    code, out, err = inspect(capsys, "test-org/Tiny-GGUF:q4_0", "--json")
    assert code == 0, err
    report = json.loads(out)
    snapshot = repo / "snapshots" / commit
    assert report["source"] == f"Hugging Face cache ({snapshot})"
    assert report["weights_bytes"] == gguf_layout("qwen3", weight_type="Q4_0").weights_bytes
    assert report["split_count"] == 2
    # A quant not downloaded, with the Hub off (the tests' HF_HUB_OFFLINE=1): said so.
    code, _, err = inspect(capsys, "test-org/Tiny-GGUF:Q8_0")
    assert code == 2
    assert "never read from the Hub, and the Hub is off (HF_HUB_OFFLINE=1)" in err
