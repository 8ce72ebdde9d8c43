"""A GGUF repo on the (local stand-in) Hub: the file llama.cpp's `-hf REPO:QUANT` would
take, read by Range for its header alone, the same model as the files on disk, and the
same answer offline afterwards; bad files and missing quants named, nothing stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import GgufError, HubError, ModelNotFoundError
from core.gguf.local import read_gguf_file, read_gguf_model
from core.hub.gguf_remote import read_hub_gguf
from core.hub.remote import HubOptions
from core.paths import hub_store_dir
from tests.gguf_models import gguf_layout, write_gguf, write_mmproj, write_model
from tests.hub_server import FakeHub, SparseFile, sparse_from_folder

REPO = "test-org/Tiny-GGUF"


def publish(hub: FakeHub, folder: Path, repo_id: str = REPO) -> None:
    hub.add(repo_id, sparse_from_folder(folder))


@pytest.fixture
def repo(hub: FakeHub, tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    for quant in ("Q4_0", "Q8_0", "F16"):
        write_model(folder, "qwen3", weight_type=quant)
    write_mmproj(folder / "mmproj-qwen3-F16.gguf")
    publish(hub, folder)
    return folder


def stored_files() -> list[Path]:
    root = hub_store_dir()
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_a_quant_reads_the_same_model_as_the_file_on_disk(hub: FakeHub, repo: Path) -> None:
    got = read_hub_gguf(REPO, "q8_0")
    local = read_gguf_model(repo / "qwen3-Q8_0.gguf")
    assert got.model.first.path == f"{REPO}/qwen3-Q8_0.gguf"
    assert got.model.tensors == local.tensors
    assert got.model.metadata == local.metadata
    assert got.model.weights_bytes == gguf_layout("qwen3", weight_type="Q8_0").weights_bytes
    assert got.model.file_sizes == local.file_sizes
    assert got.model.projector is not None
    assert got.model.projector.path == f"{REPO}/mmproj-qwen3-F16.gguf"
    headers = local.first.data_offset + local.projector.data_offset  # type: ignore[union-attr]
    assert got.read.bytes_fetched <= headers + 1024 * 1024
    assert got.read.commit == hub.repos[REPO].commit


def test_without_a_quant_llama_cpps_default_is_read(hub: FakeHub, repo: Path) -> None:
    got = read_hub_gguf(REPO)
    assert got.model.first.path == f"{REPO}/qwen3-Q8_0.gguf"  # no Q4_K_M here
    assert any("3 GGUF model files" in note for note in got.model.notes)


def test_a_big_header_is_read_with_at_most_one_mib_more(hub: FakeHub, tmp_path: Path) -> None:
    folder = tmp_path / "big"
    layout = gguf_layout("llama", weight_type="Q4_0", n_vocab=150_000, n_embd=4096, n_ff=11008)
    (path,) = write_gguf(folder / "big-Q4_0.gguf", layout)
    publish(hub, folder, "test-org/big")
    header = read_gguf_file(path).data_offset
    assert header > 2 * 1024 * 1024  # a real vocabulary's size: several round trips
    before = hub.bytes_sent
    got = read_hub_gguf("test-org/big")
    served = hub.bytes_sent - before
    assert got.model.weights_bytes == layout.weights_bytes
    assert served <= header + 1024 * 1024, (served, header)
    assert got.model.file_sizes == (path.stat().st_size,)


def test_a_second_run_answers_offline_from_the_store(
    hub: FakeHub, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = read_hub_gguf(REPO, "Q4_0")
    read_hub_gguf(REPO, "F16")  # a second quant joins the same stored snapshot
    requests = len(hub.requests)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again = read_hub_gguf(REPO, "Q4_0")
    assert again.model == first.model
    assert again.read.note is not None and again.read.note.startswith(
        "the Hub is off (HF_HUB_OFFLINE=1): answered from the copy"
    )
    assert read_hub_gguf(REPO, "F16").model.first.path == f"{REPO}/qwen3-F16.gguf"
    assert len(hub.requests) == requests
    with pytest.raises(HubError, match="quant 'Q8_0' was never read from the Hub"):
        read_hub_gguf(REPO, "Q8_0")


def test_online_again_a_stored_quant_fetches_only_the_listing(hub: FakeHub, repo: Path) -> None:
    read_hub_gguf(REPO, "Q4_0")
    before = len(hub.requests)
    read_hub_gguf(REPO, "Q4_0")
    assert [r for r in hub.requests[before:] if "/resolve/" in r] == []


def test_a_split_model_on_the_hub_is_one_model(hub: FakeHub, tmp_path: Path) -> None:
    folder = tmp_path / "split"
    layout = gguf_layout("deepseek2", weight_type="Q8_0")
    write_gguf(folder / "ds-Q8_0.gguf", layout, split=2)
    write_model(folder, "deepseek2", weight_type="Q4_0")
    publish(hub, folder, "test-org/ds")
    got = read_hub_gguf("test-org/ds", "Q8_0")
    assert got.model.split is not None and got.model.split.count == 2
    assert got.model.weights_bytes == layout.weights_bytes


def test_a_missing_quant_names_the_files_and_stores_nothing(hub: FakeHub, repo: Path) -> None:
    with pytest.raises(ModelNotFoundError) as err:
        read_hub_gguf(REPO, "Q5_K_M")
    assert str(err.value).startswith(f"{REPO}: no GGUF file for quant 'Q5_K_M' (files: ")
    assert stored_files() == []


def test_a_cut_header_on_the_hub_is_named_and_nothing_stored(hub: FakeHub, tmp_path: Path) -> None:
    folder = tmp_path / "cut"
    (path,) = write_model(folder, "llama")
    files = sparse_from_folder(folder)
    name = path.name
    files[name] = SparseFile(files[name].head[:5000], 5000)  # the file ends in its header
    hub.add("test-org/cut", files)
    with pytest.raises(GgufError) as err:
        read_hub_gguf("test-org/cut")
    assert str(err.value).startswith(f"test-org/cut/{name}: truncated")
    assert stored_files() == []


def test_a_repo_without_gguf_files_says_so(hub: FakeHub) -> None:
    hub.add("test-org/none", {"README.md": SparseFile(b"hi", 2)})
    with pytest.raises(HubError, match=r"no \*\.gguf files at "):
        read_hub_gguf("test-org/none", options=HubOptions(timeout_s=10))


def test_inspect_repo_quant_reads_the_header_then_answers_offline(
    hub: FakeHub, repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.cli import main

    assert main(["inspect", f"{REPO}:Q4_0", "--json"]) == 0
    online = json.loads(capsys.readouterr().out)
    local = read_gguf_model(repo / "qwen3-Q4_0.gguf")
    assert online["weights_bytes"] == local.weights_bytes
    commit = hub.repos[REPO].commit
    assert online["source"] == f"Hugging Face Hub ({hub.url}), main @ {commit}"
    headers = local.first.data_offset + local.projector.data_offset  # type: ignore[union-attr]
    assert hub.bytes_sent <= headers + 1024 * 1024  # the model info included
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    sent = hub.bytes_sent
    assert main(["inspect", f"{REPO}:Q4_0", "--json"]) == 0
    offline = json.loads(capsys.readouterr().out)
    assert hub.bytes_sent == sent
    assert offline["weights_bytes"] == online["weights_bytes"]
    assert offline["notes"][-1].startswith("the Hub is off (HF_HUB_OFFLINE=1): answered")


def test_inspect_repo_without_a_quant_lists_its_gguf_files(
    hub: FakeHub, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    assert main(["inspect", REPO]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (
        f"vramscope: error: {REPO}: no *.safetensors at {hub.repos[REPO].commit[:12]}: "
        "GGUF only, 3 model files "
        "(qwen3-F16.gguf, qwen3-Q4_0.gguf, qwen3-Q8_0.gguf): read one as REPO:QUANT, "
        f"e.g. `{REPO}:Q8_0` (llama.cpp's -hf default)"
    )
    assert stored_files() == []


def test_inspect_a_bad_gguf_on_the_hub_is_exit_2_and_stores_nothing(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    folder = tmp_path / "bad"
    (path,) = write_model(folder, "llama", weight_type="Q4_0")
    files = sparse_from_folder(folder)
    head = bytearray(files[path.name].head)
    head[8:16] = (2**61).to_bytes(8, "little")  # the tensor count
    files[path.name] = SparseFile(bytes(head), files[path.name].size)
    hub.add("test-org/bad", files)
    assert main(["inspect", "test-org/bad:Q4_0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(
        f"vramscope: error: test-org/bad/{path.name}: truncated or corrupt GGUF header: "
        f"tensor count {2**61:,} cannot fit in the file"
    )
    assert stored_files() == []


def test_a_hub_that_ignores_range_still_gives_the_header_alone(
    hub: FakeHub, tmp_path: Path
) -> None:
    from tests.hub_server import Misbehaviour

    folder = tmp_path / "norange"
    (path,) = write_model(folder, "phi3", weight_type="F16")
    publish(hub, folder, "test-org/norange")
    hub.misbehaviours.append(Misbehaviour(where=".gguf", ignore_range=True))
    got = read_hub_gguf("test-org/norange")
    assert got.model.weights_bytes == gguf_layout("phi3", weight_type="F16").weights_bytes
    assert got.model.file_sizes == (path.stat().st_size,)  # from the 200's Content-Length
    stored = [p for p in stored_files() if p.name == path.name]
    assert [p.stat().st_size for p in stored] == [read_gguf_file(path).data_offset]


def test_a_hub_that_stalls_is_a_timeout_and_stores_nothing(hub: FakeHub, repo: Path) -> None:
    from tests.hub_server import Misbehaviour

    hub.misbehaviours.append(Misbehaviour(where=".gguf", stall_s=30))
    with pytest.raises(HubError, match=r"did not finish the read within 1 s"):
        read_hub_gguf(REPO, "Q4_0", HubOptions(timeout_s=1))
    assert stored_files() == []


def test_a_split_model_in_a_repo_folder_and_the_projector_above_it(
    hub: FakeHub, tmp_path: Path
) -> None:
    from tests.hub_server import sparse_gguf

    layout = gguf_layout("gemma3", weight_type="F16")
    parts = write_gguf(tmp_path / "w" / "tiny-F16.gguf", layout, split=2)
    projector = write_mmproj(tmp_path / "w" / "mmproj-F16.gguf")
    files = {f"F16/{p.name}": sparse_gguf(p) for p in parts}
    files["mmproj-F16.gguf"] = sparse_gguf(projector)
    hub.add("test-org/folders", files)
    got = read_hub_gguf("test-org/folders", "F16")
    assert [f.path for f in got.model.files] == [f"test-org/folders/F16/{p.name}" for p in parts]
    assert got.model.weights_bytes == layout.weights_bytes
    assert got.model.projector is not None
    assert got.model.projector.path == "test-org/folders/mmproj-F16.gguf"
    stored = sorted(p.name for p in stored_files() if p.name.endswith(".gguf"))
    assert stored == sorted([f"F16%2F{p.name}" for p in parts] + ["mmproj-F16.gguf"])
