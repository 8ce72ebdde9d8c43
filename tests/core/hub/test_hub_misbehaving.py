"""A Hub that misbehaves (stalls, drips, ignores Range, fails) never leaves a wrong number,
a write outside the store, a hang or a traceback behind (#26's ten defects)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.catalog.resolve import build_catalog
from core.paths import hub_store_dir
from tests.core.hub.test_hub_failures import fails
from tests.core.hub.test_hub_read import (
    FLAGS,
    MLX_4BIT,
    SHARDED_BF16,
    inspect,
    publish,
    report,
    without,
)
from tests.hub_server import FakeHub, Misbehaviour
from tui.cli import main

ROOT = Path(__file__).resolve().parents[3]


def hf_cache(tmp_path: Path) -> Path:
    return tmp_path / "hf-home" / "hub"


def in_a_thread(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`main(args)` on a daemon thread, given 30 s: a read that hangs fails the test."""
    box: dict[str, int] = {}
    thread = threading.Thread(target=lambda: box.update(code=main(args)), daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the Hub read did not end"
    return box["code"], capsys.readouterr().err


# 1. A failed read leaves nothing a later read would take for the model.


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (Misbehaviour(where=".safetensors", stall_s=60), "did not finish the read within 1 s"),
        (Misbehaviour(where=".safetensors", status=500), "the Hub answered HTTP 500"),
    ],
)
def test_a_failed_read_leaves_nothing_a_later_read_takes(
    hub: FakeHub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fault: Misbehaviour,
    said: str,
) -> None:
    local = publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    hub.misbehaviours.append(fault)
    for _ in range(2):  # and again: never the analytical number from config.json alone
        line = fails(capsys, "test-org/qwen", "--hub-timeout", "1")
        assert said in line
    assert not hf_cache(tmp_path).exists()
    hub.misbehaviours.clear()
    data, _ = report(capsys, "test-org/qwen")
    on_disk, _ = report(capsys, str(local))
    assert without(data, "model", "source") == without(on_disk, "model")


def test_a_config_only_hf_cache_copy_is_never_the_answer(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Left by an interrupted download (or an older vramscope): not taken for the model."""
    local = publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    commit = hub.repos["test-org/qwen"].commit
    repo = hf_cache(tmp_path) / "models--test-org--qwen"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_bytes((local / "config.json").read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    hub.misbehaviours.append(Misbehaviour(where=".safetensors", stall_s=60))
    assert "did not finish the read" in fails(capsys, "test-org/qwen", "--hub-timeout", "1")
    hub.misbehaviours.clear()
    data, _ = report(capsys, "test-org/qwen")
    assert data["weights_source"] == "safetensors_header"


# 2. Every path stays inside the store.


@pytest.mark.parametrize("target", ["victim", "new/dir/file"])
def test_a_revision_never_writes_outside_the_store(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    path = tmp_path / target
    hub.repos["test-org/qwen"].revisions[str(path)] = hub.repos["test-org/qwen"].commit
    line = fails(capsys, "test-org/qwen", "--revision", str(path))
    assert "--revision" in line and "not a branch, tag or commit name" in line
    assert victim.read_text() == "precious"
    assert not (tmp_path / "new").exists()
    assert hub.requests == []


# 3. One deadline for the whole read, whatever the server drips.


@pytest.mark.parametrize("where", ["/api/models/", ".safetensors"])
def test_one_deadline_bounds_a_read_dripped_a_byte_a_second(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    hub.misbehaviours.append(Misbehaviour(where=where, drip_s=1.0))
    code, err = in_a_thread(["inspect", "test-org/qwen", "--hub-timeout", "2", *FLAGS], capsys)
    assert code == 2 and "Traceback" not in err
    assert "test-org/qwen: the Hub at http://127.0.0.1:" in err
    assert "within 2 s" in err or "timed out after 2 s" in err
    assert not any(hub_store_dir().rglob("*.safetensors"))


# 4. Ctrl-C ends a stalled header read: a real SIGINT to a real process.


def test_ctrl_c_ends_a_stalled_header_read(hub: FakeHub, tmp_path: Path) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    hub.misbehaviours.append(Misbehaviour(where=".safetensors", stall_s=600))
    cmd = [sys.executable, "-m", "tui", "inspect", "test-org/qwen", "--hub-timeout", "300"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [*cmd, *FLAGS], stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=ROOT
    )
    try:
        assert child.stderr is not None
        line = child.stderr.readline().decode()  # blocks until the header read starts
        assert "reading 1 header from the Hub" in line
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=15) == 130
        assert child.stdout is not None and child.stdout.read() == b""
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    with pytest.raises(ProcessLookupError):
        os.kill(child.pid, 0)


# 5. Bodies are capped whatever the server says.


def test_a_server_that_ignores_range_is_not_read_whole(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    hub.repos["test-org/qwen"].files["model.safetensors"].size = 40_000_000
    hub.misbehaviours.append(Misbehaviour(where=".safetensors", ignore_range=True))
    data, err = report(capsys, "test-org/qwen")
    on_disk, _ = report(capsys, str(local))
    assert without(data, "model", "source") == without(on_disk, "model")
    said = re.search(r"read 1 header from the Hub \((\d+) KB", err)
    assert said is not None and int(said.group(1)) <= 102, err  # what was read, and no more
    assert hub.bytes_sent < 10_000_000  # the cap, plus what socket buffers took


# 7. A damaged stored copy is read again while the Hub is reachable.


def _damage(snapshot: Path, how: str) -> None:
    if how == "truncated header":
        shard = snapshot / "model.safetensors"
        shard.write_bytes(shard.read_bytes()[:100])
    elif how == "garbage config":
        (snapshot / "config.json").write_bytes(b"\x00garbage")
    else:
        for f in snapshot.iterdir():
            f.unlink()


@pytest.mark.parametrize("how", ["truncated header", "garbage config", "empty snapshot"])
def test_a_damaged_stored_copy_is_read_again(
    hub: FakeHub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    first, _ = report(capsys, "test-org/qwen")
    snapshot = next(hub_store_dir().glob("models--test-org--qwen/snapshots/*"))
    _damage(snapshot, how)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "is damaged" in fails(capsys, "test-org/qwen")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    again, err = report(capsys, "test-org/qwen")
    assert again == first
    assert "reading 1 header from the Hub" in err and "warning" not in err


# 8. Settings errors are named, in a fresh process (huggingface_hub reads them at import).


@pytest.mark.parametrize(
    ("name", "value"),
    [("HF_ENDPOINT", "http://[::1"), ("HF_HUB_DOWNLOAD_TIMEOUT", "abc")],
)
def test_a_hub_setting_that_cannot_be_used_is_named(
    hub: FakeHub, tmp_path: Path, name: str, value: str
) -> None:
    # a repo folder in the HF cache makes the cache scan import huggingface_hub too
    (hf_cache(tmp_path) / "models--test-org--other" / "snapshots").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), name: value}
    done = subprocess.run(
        [sys.executable, "-m", "tui", "inspect", "test-org/qwen", *FLAGS],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and f"vramscope: error: {name}=" in done.stderr


# 9. Local faults are named as local, and leave no temporary folder.


def test_a_store_that_is_not_a_folder_is_a_local_fault(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    hub_store_dir().parent.mkdir(parents=True)
    os.mkfifo(hub_store_dir().parent / "hub")
    line = fails(capsys, "test-org/qwen")
    assert "cannot write vramscope's Hub store at" in line and "a local fault" in line
    assert "unexpected answer from the Hub" not in line


def test_a_full_disk_is_a_local_fault_and_leaves_no_temporary_folder(
    hub: FakeHub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    real_write = Path.write_bytes

    def full(self: Path, data: bytes) -> int:
        if "snapshots" in self.parts:
            raise OSError(28, "No space left on device", str(self))
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    line = fails(capsys, "test-org/qwen")
    assert "cannot write vramscope's Hub store at" in line and "No space left on device" in line
    assert "a local fault" in line
    assert [p.name for p in hub_store_dir().rglob("*") if p.name.startswith(".")] == []


def test_a_temporary_folder_of_a_killed_read_is_swept(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    snapshots = hub_store_dir() / "models--test-org--qwen" / "snapshots"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    stale = snapshots / f".tmp-{'0' * 40}-{int(dead.stdout)}"
    stale.mkdir(parents=True)
    report(capsys, "test-org/qwen")
    assert not stale.exists()


# 10. Invalid repo ids are refused by name, once.


@pytest.mark.parametrize("name", ["ok/..", "ok/a\x07b", "ok/-x"])
def test_an_invalid_repo_id_is_refused_by_name(
    hub: FakeHub, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    line = fails(capsys, name)
    assert "not a Hub repo id" in line and "hf download" not in line
    assert hub.requests == []


# Item 4: nothing in the user's HF cache that its tools would count as a partial download.


def test_hub_reads_leave_the_hf_cache_alone(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, SHARDED_BF16, "test-org/llama", "headers")
    publish(hub, tmp_path, MLX_4BIT, "test-org/qwen", "headers")
    for repo in ("test-org/llama", "test-org/qwen", "test-org/llama"):
        report(capsys, repo)
    assert not hf_cache(tmp_path).exists()
    code, out, err = (main(["models", "--verbose"]), *capsys.readouterr())
    assert code == 0, err
    assert "incomplete" not in out + err and "hf download" not in out + err
    catalog = build_catalog()
    assert catalog.skipped == ()
    assert {"test-org/llama", "test-org/qwen"} <= {e.name for e in catalog.entries}
    assert inspect(capsys, "test-org/qwen", "--offline", *FLAGS)[0] == 0


# Reads that overlap (several repos read at once from worker threads) stay online.


def test_overlapping_reads_keep_each_other_online(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    from core.hub.remote import HubOptions, read_hub_model

    publish(hub, tmp_path, MLX_4BIT, "test-org/slow", "headers")
    publish(hub, tmp_path, MLX_4BIT, "test-org/fast", "headers")
    hub.misbehaviours.append(Misbehaviour(where="test-org/slow/resolve/", stall_s=1.0))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # as the cache scan imports it
    box: dict[str, object] = {}

    def slow() -> None:
        try:
            box["read"] = read_hub_model("test-org/slow", HubOptions(timeout_s=20))
        except Exception as exc:  # reported by the assertion below
            box["error"] = exc

    thread = threading.Thread(target=slow, daemon=True)
    thread.start()
    assert read_hub_model("test-org/fast", HubOptions(timeout_s=20)).headers_read == 1
    thread.join(30)
    assert "error" not in box, box.get("error")
    assert constants.HF_HUB_OFFLINE is True  # put back once the last read ended
