"""`vramscope models --hub QUERY`: the Hub's search, bounded, in a table or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.hub.test_hub_read import MLX_4BIT, SHARDED_BF16, _closed_port, publish
from tests.hub_server import FakeHub, SparseFile
from tui.cli import main


def test_search_lists_what_the_listing_tells(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen-4bit", "headers")
    publish(hub, tmp_path / "b", SHARDED_BF16, "test-org/llama", "headers")
    hub.add("test-org/qwen-gguf", {"q.gguf": SparseFile(b"x", 1)})
    assert main(["models", "--hub", "qwen"]) == 0
    out = capsys.readouterr().out
    assert "test-org/qwen-4bit" in out and "test-org/qwen-gguf" in out and "llama" not in out
    assert out.strip().splitlines()[-1].startswith("2 Hub results for 'qwen'")
    assert main(["models", "--hub", "test-org", "--limit", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["repo_id"] for r in rows] == ["test-org/llama"] and rows[0]["safetensors"]


def test_safetensors_is_unknown_where_the_listing_does_not_say(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen-4bit", "headers")
    hub.add("test-org/qwen-gguf", {"q.gguf": SparseFile(b"x", 1)})  # tags: gguf only
    hub.add("test-org/qwen-bare", {"README.md": SparseFile(b"x", 1)})  # no tags at all
    assert main(["models", "--hub", "qwen"]) == 0
    cells = {line.split()[0]: line.split()[3] for line in capsys.readouterr().out.splitlines()[1:4]}
    assert cells == {
        "test-org/qwen-4bit": "yes",
        "test-org/qwen-gguf": "no",
        "test-org/qwen-bare": "?",
    }


def test_search_needs_the_hub(
    hub: FakeHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    assert main(["models", "--hub", "qwen", "--hub-timeout", "0.5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vramscope: error: --hub: ") and err.count("\n") == 1
    assert "the Hub at http://127.0.0.1:" in err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["models", "--hub", "qwen"]) == 2
    assert "the Hub is off (HF_HUB_OFFLINE=1)" in capsys.readouterr().err
