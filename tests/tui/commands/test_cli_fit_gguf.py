"""`vramscope fit` over GGUF files (#40): one row per quant file found in the models
folders and the HF cache, each `inspect`'s llama.cpp answer to the byte, ranked, with
the largest `--n-gpu-layers` that fits when the whole model does not; a bad file is a
row with its one-line reason, never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.gguf_llama_models import write_model as write_golden_model
from tests.gguf_models import write_mmproj, write_model
from tui.cli import main


def run(capsys: pytest.CaptureFixture[str], cmd: str, *argv: str) -> tuple[int, str, str]:
    code = main([cmd, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def as_json(capsys: pytest.CaptureFixture[str], cmd: str, *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, cmd, *argv, "--json")
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    return document


@pytest.fixture
def models(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    for quant in ("Q4_0", "Q8_0", "F16"):
        write_model(root / "qwen3-GGUF", "qwen3", weight_type=quant)
    write_mmproj(root / "qwen3-GGUF" / "mmproj-qwen3-F16.gguf")
    write_model(root / "ds-GGUF", "deepseek2", weight_type="Q8_0", split=2)
    write_golden_model(root / "big-GGUF", "llama")
    (root / "broken-GGUF").mkdir()
    (root / "broken-GGUF" / "broken-Q4_0.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    return root


def test_every_quant_file_is_a_row_that_equals_inspect(
    models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    limit = str(12 * 1024 * 1024)
    document = as_json(capsys, "fit", "--models-dir", str(models), "--memory-limit", limit,
                       "-n", "4096", "--quantizations", "stored")  # fmt: skip
    rows = document["gguf_rows"]
    files = {Path(r["file"]).name for r in rows}
    assert files == {
        "qwen3-Q4_0.gguf", "qwen3-Q8_0.gguf", "qwen3-F16.gguf",
        "deepseek2-Q8_0-00001-of-00002.gguf",  # a split model is one row, its first part
        "golden-llama.gguf", "broken-Q4_0.gguf",
    }  # fmt: skip
    (broken,) = [r for r in rows if r["file"].endswith("broken-Q4_0.gguf")]
    assert broken["fits"] is None and "GGUF" in broken["unavailable"]
    for row in rows:
        if row["unavailable"] is not None:
            continue
        assert row["engine"] == "llama.cpp" and row["tokens"] == 4096
        load = as_json(capsys, "inspect", row["file"], "--memory-limit", limit, "-n", "4096")
        load = load["load"]
        assert row["total_bytes"] == load["total_bytes"]
        assert row["held_bytes"] == load["held_bytes"]
        assert row["fits"] == load["fits"]
        assert row["largest_context_tokens"] == load["largest_context"]["tokens"]
        assert row["largest_gpu_layers"] == load["largest_gpu_layers"]
        assert row["llama_server"] == load["llama_server"]
    (qwen_q4,) = [r for r in rows if r["file"].endswith("qwen3-Q4_0.gguf")]
    assert "--mmproj" in qwen_q4["llama_server"]  # the projector beside it is counted
    # Ranked: every fitting row before every row that does not fit, the unread last.
    order = [(r["fits"] is not True, r["fits"] is None) for r in rows]
    assert order == sorted(order)


def test_a_model_too_big_for_the_device_says_how_many_layers_fit(
    models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = next((models / "big-GGUF").glob("*.gguf"))
    whole = as_json(capsys, "inspect", str(path), "--memory-limit", "64G", "-n", "4096")
    budget = str(whole["load"]["held_bytes"] - 3 * 1024 * 1024)
    document = as_json(capsys, "fit", "--models-dir", str(models), "--memory-limit", budget,
                       "-n", "4096", "--quantizations", "stored")  # fmt: skip
    (row,) = [r for r in document["gguf_rows"] if r["file"] == str(path)]
    assert row["fits"] is False
    assert 0 < row["largest_gpu_layers"] < row["layer_count"]
    code, text, _ = run(capsys, "fit", "--models-dir", str(models), "--memory-limit", budget,
                        "-n", "4096", "--quantizations", "stored")  # fmt: skip
    assert code == 0
    (line,) = [x for x in text.splitlines() if x.endswith(str(path))]
    assert "DOES NOT FIT" in line
    assert f"{row['largest_gpu_layers']} of {row['layer_count']}" in line
    assert "GGUF files only" not in text  # the folders' rows stand where the skip was


def test_llama_cpp_flags_shape_every_row_and_bad_ones_are_refused(
    models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ("--models-dir", str(models), "--memory-limit", "1G", "--quantizations", "stored")
    f16 = as_json(capsys, "fit", *base)["gguf_rows"]
    q8 = as_json(capsys, "fit", *base, "-ctk", "q8_0", "-ctv", "q8_0", "-np", "2")["gguf_rows"]
    by_file = {r["file"]: r for r in f16 if r["kv_bytes"]}
    for row in q8:
        if row["file"] in by_file:
            assert row["kv_bytes"] < by_file[row["file"]]["kv_bytes"]
            assert "-np 2" in row["llama_server"] and "-ctk q8_0" in row["llama_server"]
    code, out, err = run(capsys, "fit", *base, "--cache-type-k", "q3")
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and "--cache-type-k" in err


def test_a_quant_llama_server_downloaded_into_the_hf_cache_is_a_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.model_writers import write_cache_file, write_ref

    cache = tmp_path / "hf" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    repo = cache / "models--test-org--Tiny-GGUF"
    commit = "c" * 40
    (path,) = write_model(tmp_path / "src", "gemma3", weight_type="Q4_0")
    write_cache_file(repo, commit, "gemma3-Q4_0.gguf", from_file=path)
    write_ref(repo, "main", commit)
    document = as_json(capsys, "fit", "--memory-limit", "1G", "--quantizations", "stored")
    (row,) = document["gguf_rows"]
    assert row["model"] == "test-org/Tiny-GGUF"
    assert row["quant"] == "Q4_0"
    assert row["fits"] is True


def test_inspect_and_fit_word_a_gguf_s_verdict_the_same(
    models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One wording (`core.answer.verdict`): inspect's load line and fit's VERDICT cell say
    `FITS` / `DOES NOT FIT` alike for the same question (#39; fit said `fits` before)."""
    path = next((models / "big-GGUF").glob("*.gguf"))
    whole = as_json(capsys, "inspect", str(path), "--memory-limit", "64G", "-n", "4096")
    held = whole["load"]["held_bytes"]
    for budget, word in ((held, "FITS"), (held - 3 * 1024 * 1024, "DOES NOT FIT")):
        flags = ("--memory-limit", str(budget), "-n", "4096")
        code, text, _ = run(capsys, "inspect", str(path), *flags)
        assert code == 0
        (load_line,) = [x for x in text.splitlines() if "load (llama.cpp):" in x]
        assert load_line.rsplit(": ", 1)[1] == word
        code, table, _ = run(capsys, "fit", "--models-dir", str(models), *flags,
                             "--quantizations", "stored")  # fmt: skip
        assert code == 0
        head = re.split(r"\s{2,}", next(x for x in table.splitlines() if "VERDICT" in x).strip())
        (line,) = [x for x in table.splitlines() if x.endswith(str(path))]
        cells = dict(zip(head, re.split(r"\s{2,}", line.strip()), strict=False))
        assert cells["VERDICT"] == word
