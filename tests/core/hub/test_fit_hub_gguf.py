"""`vramscope fit --hub` over GGUF repos (#40): every quant file of every listed GGUF
repo is a row, each the answer `inspect REPO:QUANT` gives, read by Range (headers
only); a second run answers offline from the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.gguf_models import write_gguf, write_mmproj, write_model
from tests.hub_server import FakeHub, sparse_from_folder
from tui.cli import main

FLAGS = ["--memory-limit", "12MiB", "--max-tokens", "4096", "--quantizations", "stored"]
QUANTS = ("Q4_0", "Q8_0", "F16")


def fit_hub(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any], str]:
    code = main(["fit", "--hub", "--author", "gguf-org", "--json", *FLAGS, *extra])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else {}), out.err


@pytest.fixture
def repos(hub: FakeHub, tmp_path: Path) -> dict[str, Path]:
    qwen = tmp_path / "qwen"
    for quant in QUANTS:
        write_model(qwen, "qwen3", weight_type=quant)
    write_mmproj(qwen / "mmproj-qwen3-F16.gguf")
    gemma = tmp_path / "gemma"
    write_model(gemma, "gemma3", weight_type="Q4_0")
    from tests.gguf_models import gguf_layout

    write_gguf(gemma / "gemma3-Q8_0.gguf", gguf_layout("gemma3", weight_type="Q8_0"), split=2)
    folders = {"gguf-org/Qwen3-Tiny-GGUF": qwen, "gguf-org/Gemma3-Tiny-GGUF": gemma}
    for repo_id, folder in folders.items():
        hub.add(repo_id, sparse_from_folder(folder))
        hub.listing.meta[repo_id] = {"library_name": "gguf"}
    return folders


def test_every_quant_file_is_a_row_as_inspect_gives_it(
    hub: FakeHub, repos: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc, err = fit_hub(capsys)
    assert code == 0, err
    rows = doc["gguf_rows"]
    assert doc["rows"] == []  # no GGUF repo is read as a safetensors one
    assert sorted(r["file"] for r in rows) == sorted(
        [f"gguf-org/Qwen3-Tiny-GGUF:{q}" for q in QUANTS]
        + ["gguf-org/Gemma3-Tiny-GGUF:Q4_0", "gguf-org/Gemma3-Tiny-GGUF:Q8_0"]
    )
    assert all(r["unavailable"] is None for r in rows), rows
    # At 12 MiB some quants fit whole and some only with layers on the host.
    assert {r["fits"] for r in rows} == {True, False}
    assert all(r["largest_gpu_layers"] > 0 for r in rows if r["fits"] is False)
    # Headers only: far less than the files' sizes.
    whole = sum(p.stat().st_size for folder in repos.values() for p in folder.glob("*.gguf"))
    assert hub.bytes_sent < whole / 2, (hub.bytes_sent, whole)
    for row in rows:
        code = main(["inspect", row["file"], "--json", *FLAGS[:4]])
        inspected = json.loads(capsys.readouterr().out)
        assert code == 0
        load = inspected["load"]
        assert row["total_bytes"] == load["total_bytes"], row["file"]
        assert row["fits"] == load["fits"]
        assert row["largest_gpu_layers"] == load["largest_gpu_layers"]
        assert row["largest_context_tokens"] == load["largest_context"]["tokens"]
        assert row["llama_server"] == load["llama_server"]
        assert row["llama_server"].startswith(f"llama-server -hf {row['file']} ")


def test_the_table_lists_each_quant_and_how_many_layers_fit(
    hub: FakeHub, repos: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["fit", "--hub", "--author", "gguf-org", *FLAGS])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("GGUF models: llama.cpp's load"))
    table = lines[start + 1 :]
    assert table[0].split()[:3] == ["MODEL", "QUANT", "WEIGHTS"]
    for quant in QUANTS:
        (line,) = [x for x in table if x.endswith(f"gguf-org/Qwen3-Tiny-GGUF:{quant}")]
        assert (" fits " in line) or ("DOES NOT FIT" in line and " of " in line)


def test_a_second_run_answers_offline_from_the_store(
    hub: FakeHub,
    repos: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, first, err = fit_hub(capsys)
    assert code == 0, err
    assert not any(r["from_store"] for r in first["gguf_rows"])
    hub.requests.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, again, err = fit_hub(capsys)
    assert code == 0, err
    assert hub.requests == []
    strip = ("from_store",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in again["gguf_rows"]] == [
        {k: v for k, v in r.items() if k not in strip} for r in first["gguf_rows"]
    ]
    assert all(r["from_store"] for r in again["gguf_rows"])


def test_a_repo_that_cannot_be_read_is_one_row_with_its_reason(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "model-Q4_0.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    hub.add("gguf-org/Broken-GGUF", sparse_from_folder(folder))
    hub.listing.meta["gguf-org/Broken-GGUF"] = {"library_name": "gguf"}
    code, doc, err = fit_hub(capsys)
    assert code == 0, err
    (row,) = doc["gguf_rows"]
    assert row["fits"] is None
    assert row["unavailable"].startswith("gguf-org/Broken-GGUF/model-Q4_0.gguf: ")
    assert "Traceback" not in err


def test_a_listing_of_both_kinds_reads_each_as_its_own(
    hub: FakeHub, repos: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.core.hub.hub_fit_repos import repo_files

    hub.add("gguf-org/safetensors-model", repo_files(0))  # library transformers
    code, doc, err = fit_hub(capsys)
    assert code == 0, err
    assert [r["model"] for r in doc["rows"]] == ["gguf-org/safetensors-model"]
    assert doc["rows"][0]["exact"] is True
    assert {r["model"] for r in doc["gguf_rows"]} == set(repos)
    assert doc["inputs"]["hub"]["listed"] == 3
    assert "3 listed, 3 read from the Hub" in err
