"""Every way a Hub read fails: one line on stderr naming the repo, exit 2, no traceback."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.core.hub.test_hub_read import FLAGS, MLX_4BIT, _closed_port, publish
from tests.hub_server import FakeHub, SparseFile
from tui.cli import main

CONFIG = SparseFile(json.dumps({"model_type": "llama", "hidden_size": 64}).encode(), 0)
CONFIG.size = len(CONFIG.head)


def fails(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["inspect", *args, *FLAGS])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert "Traceback" not in out.err
    lines = [line for line in out.err.splitlines() if not line.startswith("vramscope: reading")]
    assert len(lines) == 1 and lines[0].startswith("vramscope: error: "), out.err
    return lines[0]


def header_file(header: bytes, declared: int | None = None) -> SparseFile:
    n = len(header) if declared is None else declared
    return SparseFile(struct.pack("<Q", n) + header, 8 + max(n, len(header)) + 1_000_000)


def test_gated_without_a_token(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/gated", "headers")
    hub.repos["test-org/gated"].gated = True
    line = fails(capsys, "test-org/gated")
    assert "test-org/gated: gated or private on the Hub: a token with access is needed" in line


def test_missing_repo_lists_the_closest_names(
    hub: FakeHub, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, "mlx-community/Qwen2.5-7B-Instruct-8bit")
    assert "not found on the Hub" in line
    assert "closest: mlx-community/Qwen2.5-7B-Instruct-4bit" in line


def test_missing_revision(hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    assert "revision 'v9' not found on the Hub" in fails(
        capsys, "test-org/qwen", "--revision", "v9"
    )


@pytest.mark.parametrize(
    ("files", "said"),
    [
        (["model-q4_k_m.gguf", "README.md"], "GGUF only"),
        (["pytorch_model.bin", "config.json"], "PyTorch weights only"),
    ],
)
def test_a_repo_without_safetensors_says_what_it_has(
    hub: FakeHub, capsys: pytest.CaptureFixture[str], files: list[str], said: str
) -> None:
    hub.add("test-org/other", {n: SparseFile(b"x", 1) for n in files})
    line = fails(capsys, "test-org/other")
    assert "no *.safetensors" in line and said in line and files[0] in line


def test_unreachable_for_a_repo_never_read(
    hub: FakeHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    line = fails(capsys, "test-org/never")
    assert "test-org/never: the Hub at http://127.0.0.1:" in line and "unreachable" in line


def test_a_hub_that_stalls_times_out(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/slow", "headers")
    hub.hold()  # answers nothing until the test ends
    line = fails(capsys, "test-org/slow", "--hub-timeout", "0.5")
    assert "unreachable (timed out after 0.5 s)" in line


def test_offline_for_a_repo_never_read(
    hub: FakeHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    line = fails(capsys, "test-org/never", "--offline")
    assert "the Hub is off (--offline) and it was never read" in line
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "the Hub is off (HF_HUB_OFFLINE=1)" in fails(capsys, "test-org/never")
    assert hub.requests == []


@pytest.mark.parametrize(
    "header",
    [
        b"{not json",
        b'{"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,1]}}',
        b'{"w":{"dtype":"F16","shape":["2"],"data_offsets":[0,4]}}',
        b'{"w":{"dtype":"F16","shape":[2]}}',
        b'{"__metadata__":' + b"[" * 200 + b"]" * 200 + b"}",
        b'{"w\xff":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}',  # not UTF-8
    ],
)
def test_a_malformed_remote_header_reads_as_the_same_file_on_disk(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], header: bytes
) -> None:
    """One header parser: the Hub's bytes are read as the file on disk is, warning and all."""
    shard = header_file(header)
    hub.add("test-org/bad", {"config.json": CONFIG, "model.safetensors": shard})
    local = tmp_path / "bad"
    local.mkdir()
    (local / "config.json").write_bytes(CONFIG.head)
    with (local / "model.safetensors").open("wb") as fh:
        fh.write(shard.head)
        fh.truncate(shard.size)
    remote_code = main(["inspect", "test-org/bad", "--json", *FLAGS])
    remote = capsys.readouterr()
    disk_code = main(["inspect", str(local), "--json", *FLAGS])
    disk = capsys.readouterr()
    assert remote_code == disk_code == 0, remote.err
    keep = ("model", "source", "warnings")
    assert {k: v for k, v in json.loads(remote.out).items() if k not in keep} == {
        k: v for k, v in json.loads(disk.out).items() if k not in keep
    }
    warned = [line for line in remote.err.splitlines() if "warning" in line]
    disk_warned = [line for line in disk.err.splitlines() if "warning" in line]
    assert len(warned) == len(disk_warned)
    for hub_line, disk_line in zip(warned, disk_warned, strict=True):
        assert hub_line.rsplit(": ", 1)[-1] == disk_line.rsplit(": ", 1)[-1]


def test_an_oversized_remote_header_is_refused(
    hub: FakeHub, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = header_file(b"{}", declared=30_000_000)
    hub.add("test-org/bad", {"config.json": CONFIG, "model.safetensors": shard})
    line = fails(capsys, "test-org/bad")
    assert "test-org/bad/model.safetensors: header length 30000000 is over the 25000000" in line
    assert hub.bytes_sent < 200_000
