"""`vramscope inspect org/name` for a repo only on the Hub: the same answer as the files on
disk, from config, index and headers only, and the same answer offline afterwards."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from core.catalog.entry import EntryOrigin
from core.catalog.profiles import load_profile
from core.catalog.resolve import build_catalog
from core.paths import hub_store_dir
from tests.hub_server import FakeHub, sparse_from_folder
from tests.model_writers import write_skeleton
from tui.cli import main

FLAGS = ["--backend", "cpu", "--memory-limit", "64GB", "--max-tokens", "32768"]
SHARDED_BF16 = "meta-llama/Llama-3.1-8B-Instruct"  # four BF16 shards and an index
MLX_4BIT = "mlx-community/Qwen2.5-7B-Instruct-4bit"  # one model.safetensors, U32 + F16


def publish(hub: FakeHub, tmp_path: Path, profile: str, repo_id: str, layout: str) -> Path:
    """Write the profile as header-only files and serve the same files on the Hub."""
    local = write_skeleton(load_profile(profile), tmp_path / f"local-{layout}", layout=layout)
    hub.add(repo_id, sparse_from_folder(local))
    return local


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["inspect", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def report(capsys: pytest.CaptureFixture[str], model: str, *extra: str) -> tuple[dict, str]:
    code, out, err = inspect(capsys, model, "--json", *FLAGS, *extra)
    assert code == 0, err
    return json.loads(out), err


def without(d: dict, *keys: str) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


@pytest.mark.parametrize(
    ("profile", "layout"),
    [(SHARDED_BF16, "headers"), (SHARDED_BF16, "headers-no-index"), (MLX_4BIT, "headers")],
)
def test_a_hub_read_equals_the_local_read_key_by_key(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: str, layout: str
) -> None:
    local = publish(hub, tmp_path, profile, "test-org/model", layout)
    remote, err = report(capsys, "test-org/model")
    on_disk, _ = report(capsys, str(local))
    commit = hub.repos["test-org/model"].commit
    assert remote["source"] == f"Hugging Face Hub ({hub.url}), main @ {commit}"
    assert remote["weights_source"] == "safetensors_header"
    assert without(remote, "model", "source") == without(on_disk, "model")
    shards = [n for n in hub.repos["test-org/model"].files if n.endswith(".safetensors")]
    assert f"reading {len(shards)} header" in err and "from the Hub" in err
    # The banner: mlxcel's lines, plus one Source line under Model.
    _, banner, _ = inspect(capsys, "test-org/model", *FLAGS)
    _, local_banner, _ = inspect(capsys, str(local), *FLAGS)
    lines = banner.splitlines()
    assert lines[2] == f"  Source:          Hugging Face Hub ({hub.url}), main @ {commit}"
    assert lines[3:] == local_banner.splitlines()[2:]


def test_bytes_fetched_stay_below_one_percent_of_the_weights(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, SHARDED_BF16, "test-org/llama", "headers")
    data, _ = report(capsys, "test-org/llama")
    weights = data["weights_bytes"]
    assert hub.bytes_sent < weights / 100, (hub.bytes_sent, weights)
    stored = sum(f.stat().st_size for f in hub_store_dir().rglob("*") if f.is_file())
    assert stored < 1_000_000  # headers and two small files, no data region


def test_answers_offline_afterwards_and_says_so(
    hub: FakeHub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    online, _ = report(capsys, "test-org/qwen")
    sent = len(hub.requests)
    again, err = report(capsys, "test-org/qwen", "--offline")
    assert again == online and "offline (--offline): answered from the copy" in err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again, err = report(capsys, "test-org/qwen")
    assert again == online and "offline (HF_HUB_OFFLINE=1)" in err
    assert len(hub.requests) == sent  # offline: not one request
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    again, err = report(capsys, "test-org/qwen")
    assert without(again, "source") == without(online, "source")
    assert "the Hub is unreachable" in err and err.count("\n") == 1
    # The catalog lists it, marked hub, with no network at all.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    entries = [e for e in build_catalog().entries if e.name == "test-org/qwen"]
    assert [e.origin for e in entries] == [EntryOrigin.HUB]
    assert entries[0].origin_label.startswith("hub @ main ")


def test_a_second_online_read_of_the_same_commit_fetches_only_the_commit(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, SHARDED_BF16, "test-org/llama", "headers")
    first, _ = report(capsys, "test-org/llama")
    before = len(hub.requests)
    second, err = report(capsys, "test-org/llama")
    assert second == first and "reading" not in err
    assert [r for r in hub.requests[before:] if "/api/models/" in r] == hub.requests[before:]


def test_revision_reads_that_commit(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    repo = hub.repos["test-org/qwen"]
    repo.revisions["v1.0"] = repo.commit
    data, _ = report(capsys, "test-org/qwen", "--revision", "v1.0")
    assert data["source"].endswith(f"v1.0 @ {repo.commit}")


def test_index_only_cache_snapshots_become_usable(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An HF cache snapshot with config and index but no shards (an unfinished
    download) is read from the Hub instead, and the HF cache is left as it was."""
    local = publish(hub, tmp_path, SHARDED_BF16, "test-org/llama", "headers")
    commit = hub.repos["test-org/llama"].commit
    repo = tmp_path / "hf-home" / "hub" / "models--test-org--llama"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for name in ("config.json", "model.safetensors.index.json"):
        (snapshot / name).write_bytes((local / name).read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    before = sorted(str(p) for p in repo.rglob("*"))
    data, _ = report(capsys, "test-org/llama")
    on_disk, _ = report(capsys, str(local))
    assert without(data, "model", "source") == without(on_disk, "model")
    assert sorted(str(p) for p in repo.rglob("*")) == before


def test_local_models_and_profiles_never_touch_the_network(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = publish(hub, tmp_path, MLX_4BIT, MLX_4BIT, "headers")  # the Hub has it too
    report(capsys, MLX_4BIT)
    report(capsys, str(local))
    report(capsys, "Qwen2.5-7B-Instruct-4bit")
    assert hub.requests == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_command_reads_the_hub_in_a_fresh_process(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """huggingface_hub reads HF_ENDPOINT and HF_HUB_OFFLINE at import: a real process."""
    import os
    import subprocess
    import sys

    local = publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    root = Path(__file__).resolve().parents[3]
    cmd = [sys.executable, "-m", "tui", "inspect", "test-org/qwen", "--json", *FLAGS]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "reading 1 header from the Hub" in done.stderr
    on_disk, _ = report(capsys, str(local))
    assert without(json.loads(done.stdout), "model", "source") == without(on_disk, "model")
    offline = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env={**env, "HF_HUB_OFFLINE": "1"},
        cwd=root,
        timeout=120,
    )
    assert offline.returncode == 0 and "offline (HF_HUB_OFFLINE=1)" in offline.stderr


@pytest.mark.parametrize("split", [["--tp", "2"], ["--tp", "1"]])
def test_a_split_plan_of_a_hub_repo_reads_its_headers_as_inspect_does(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], split: list[str]
) -> None:
    """`inspect REPO --tp 2` plans from the same headers `inspect REPO` read (#41), and
    gives the plan the local folder's files give, rank by rank."""
    local = publish(hub, tmp_path, SHARDED_BF16, "test-org/model", "headers")
    remote, err = report(capsys, "test-org/model", *split)
    on_disk, _ = report(capsys, str(local), *split)
    assert "never downloads" not in err
    for ours, theirs in zip(remote["ranks"], on_disk["ranks"], strict=True):
        assert without(ours, "model", "source") == without(theirs, "model", "source")
        assert ours["model"] == "test-org/model"
    assert without(remote, "model", "source", "ranks") == without(
        on_disk, "model", "source", "ranks"
    )
    if split[1] == "2":
        assert len(remote["ranks"]) == 2


def test_after_a_hub_read_fit_lists_a_built_in_model_once_from_its_headers(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The built-in profile and the Hub store's copy of the same repo are one model: `fit`
    lists it once, answered from the real headers (#41)."""
    publish(hub, tmp_path, SHARDED_BF16, SHARDED_BF16, "headers")
    stored = ["--quantizations", "stored", *FLAGS]
    assert main(["fit", "--hub", "--author", "meta-llama", "--json", *stored]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["rows"]  # read: now in the Hub store
    assert listed["exact"]
    assert main(["fit", "--json", *stored]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out)["rows"] if r["model"] == SHARDED_BF16]
    assert len(rows) == 1, [r["where"] for r in rows]
    assert rows[0]["where"].startswith("hub @ main"), rows[0]["where"]
