"""Discovery: the HF cache through the real huggingface_hub, model folders, and everything
that must be skipped with its reason rather than raise."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.catalog.model_dir import read_model_dir
from core.catalog.profiles import load_profile
from core.catalog.resolve import (
    ORIGIN_FOLDER,
    ORIGIN_HF_CACHE,
    Catalog,
    CatalogEntry,
    build_catalog,
)
from core.estimate.kv_cache import KvKind
from core.estimate.weights import WeightsSource
from core.model.weight_files import INDEX_FILE
from tests.core.catalog.catalog_fixtures import (
    TINY_CONFIG,
    HubCache,
    run_unprivileged,
    shared_tmp_dir,
    tiny_safetensors,
    tiny_weight_bytes,
    write_tiny_model,
)
from tests.model_writers import write_skeleton

LLAMA_4BIT = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
QWEN3_4BIT = "mlx-community/Qwen3-30B-A3B-4bit"


@pytest.fixture
def hub_cache(tmp_path: Path) -> HubCache:
    return HubCache(tmp_path / "hf" / "hub")


def catalog_of(cache: HubCache | None = None, *dirs: Path) -> Catalog:
    """The catalog of exactly these sources (no profiles, no environment)."""
    return build_catalog(
        list(dirs),
        hf_cache_dir=cache.root if cache else None,
        include_hf_cache=cache is not None,
        include_profiles=False,
        env={},
    )


def by_name(catalog: Catalog) -> dict[str, CatalogEntry]:
    return {e.name: e for e in catalog.entries}


def reasons(catalog: Catalog) -> dict[str, str]:
    """Skipped items by the last part of their location."""
    return {Path(s.location).name: s.reason for s in catalog.skipped}


def assert_matches_estimator(entry: CatalogEntry) -> None:
    """The list shows what `inspect` on that folder would use."""
    assert entry.path is not None
    snap = read_model_dir(entry.path)
    assert (entry.weight_bytes, entry.weights_source) == (snap.weights.bytes, snap.weights.source)
    assert entry.kv_kind == (snap.kv_arch.kind if snap.kv_arch else None)


# --- The HF cache -------------------------------------------------------------------------


def test_mlx_repos_in_the_cache_are_listed_with_their_facts(hub_cache: HubCache) -> None:
    snapshot = hub_cache.add_profile(LLAMA_4BIT)
    hub_cache.add_profile(QWEN3_4BIT)
    catalog = catalog_of(hub_cache)
    assert catalog.skipped == ()
    llama = by_name(catalog)[LLAMA_4BIT]
    assert llama.origin == ORIGIN_HF_CACHE
    assert llama.path == snapshot and llama.revision == snapshot.name and llama.refs == ("main",)
    assert llama.origin_label == f"HF cache @ main {snapshot.name[:8]}"
    assert llama.format_label == "MLX 4-bit g64"
    assert llama.weight_bytes == 4_517_404_672
    assert llama.weights_source is WeightsSource.SAFETENSORS_HEADER
    assert llama.kv_kind is KvKind.STANDARD and llama.max_position_embeddings == 131072
    assert llama.weights_on_disk is False  # header-only blobs: the data region is a hole
    qwen = by_name(catalog)[QWEN3_4BIT]
    assert (qwen.weight_bytes, qwen.max_position_embeddings) == (17_174_622_208, 40960)
    for entry in catalog.entries:
        assert_matches_estimator(entry)


def test_real_weights_on_disk_are_seen(hub_cache: HubCache) -> None:
    hub_cache.add_tiny("org/tiny")
    (entry,) = catalog_of(hub_cache).entries
    assert entry.weights_on_disk is True
    assert entry.weight_bytes == tiny_weight_bytes()
    assert entry.format_label == "BF16"
    assert_matches_estimator(entry)


@pytest.mark.parametrize("layout", ["headers", "headers-no-index", "index-only"])
@pytest.mark.parametrize(
    "profile_id", ["meta-llama/Llama-3.1-8B-Instruct", QWEN3_4BIT, "google/gemma-3-4b-it"]
)
def test_every_layout_lists_what_the_estimator_reads(
    hub_cache: HubCache, profile_id: str, layout: str
) -> None:
    hub_cache.add_profile(profile_id, layout=layout)
    (entry,) = catalog_of(hub_cache).entries
    assert entry.weight_bytes == load_profile(profile_id).weight_bytes
    assert_matches_estimator(entry)
    assert entry.weights_on_disk is False


def test_an_index_without_total_size_sums_the_shard_headers(tmp_path: Path) -> None:
    folder = write_skeleton(load_profile(QWEN3_4BIT), tmp_path / "models" / "qwen")
    index = json.loads((folder / INDEX_FILE).read_text())
    del index["metadata"]
    (folder / INDEX_FILE).write_text(json.dumps(index))
    (entry,) = catalog_of(None, tmp_path / "models").entries
    assert entry.weight_bytes == 17_174_622_208
    assert_matches_estimator(entry)


def test_a_missing_shard_is_an_unfinished_download(hub_cache: HubCache) -> None:
    snapshot = hub_cache.add_profile("meta-llama/Llama-3.1-8B-Instruct", as_repo="org/partial")
    (snapshot / "model-00003-of-00004.safetensors").unlink()
    catalog = catalog_of(hub_cache)
    assert catalog.entries == ()
    (skipped,) = catalog.skipped
    assert skipped.name == "org/partial"
    assert skipped.reason == (
        "download incomplete: 1 of the 4 shards its index lists are missing "
        "(model-00003-of-00004.safetensors); finish it with `hf download org/partial`"
    )


def test_an_incomplete_blob_marks_the_repo_unfinished(hub_cache: HubCache) -> None:
    hub_cache.add_tiny("org/downloading")
    blob = hub_cache.repo_path("org/downloading") / "blobs" / ("e3b0c442" * 8 + ".incomplete")
    blob.write_bytes(b"\0" * 4096)
    hub_cache.add_tiny("org/done")
    catalog = catalog_of(hub_cache)
    assert [e.name for e in catalog.entries] == ["org/done"]
    (skipped,) = catalog.skipped
    assert skipped.name == "org/downloading"
    assert skipped.reason.startswith("download not finished: 1 partial file(s) in blobs/")
    assert skipped.reason.endswith("finish it with `hf download org/downloading`")


def test_symlink_loops_are_skipped(hub_cache: HubCache, tmp_path: Path) -> None:
    in_snapshot = hub_cache.add_tiny("org/file-loop")
    os.symlink("model.bin", in_snapshot / "model.bin")  # points at itself
    repo = hub_cache.repo_path("org/snapshot-loop")
    (repo / "snapshots").mkdir(parents=True)
    os.symlink("a" * 40, repo / "snapshots" / ("a" * 40))
    models = tmp_path / "models"
    models.mkdir()
    os.symlink("loop", models / "loop")
    os.symlink(models / "nowhere", models / "dangling")
    write_tiny_model(models / "ok")
    catalog = catalog_of(hub_cache, models)
    assert sorted(e.name for e in catalog.entries) == ["ok"]
    why = reasons(catalog)
    assert why["models--org--file-loop"].startswith("Blob missing (broken symlink)")
    assert why["models--org--snapshot-loop"] == "cannot read: too many levels of symbolic links"
    assert why["loop"] == "broken symlink: too many levels of symbolic links"
    assert why["dangling"] == "broken symlink: no such file or directory"


def test_unreadable_folders_are_skipped_with_the_reason() -> None:
    with shared_tmp_dir() as root:
        cache = HubCache(root / "hub")
        locked_snapshot = cache.add_tiny("org/locked-snapshot")
        cache.add_tiny("org/locked-repo")
        cache.add_tiny("org/readable")
        models = root / "models"
        write_tiny_model(models / "readable-folder")
        write_tiny_model(models / "locked-folder")
        for d, _, files in os.walk(root):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        for locked in (
            locked_snapshot,
            cache.repo_path("org/locked-repo") / "snapshots",
            models / "locked-folder",
        ):
            locked.chmod(0)

        def listing() -> tuple[list[str], dict[str, str]]:
            catalog = catalog_of(cache, models)
            return sorted(e.name for e in catalog.entries), reasons(catalog)

        names, why = run_unprivileged(listing)
    assert names == ["org/readable", "readable-folder"], why
    assert why[locked_snapshot.name] == "cannot list the folder: permission denied"
    assert why["models--org--locked-repo"] == "cannot read: permission denied"
    assert why["locked-folder"] == "cannot list the folder: permission denied"


def test_things_that_are_not_models_are_skipped(hub_cache: HubCache, tmp_path: Path) -> None:
    hub_cache.add_files("org/readme-only", {"README.md": b"# card"})
    hub_cache.add_files("org/gguf", {"model-q4_k_m.gguf": b"GGUF", "README.md": b"x"})
    hub_cache.add_files("org/adapter", {"adapter_model.safetensors": tiny_safetensors()})
    hub_cache.add_files("org/tokenizer", {"config.json": b'{"model_type": "tokenizer"}'})
    hub_cache.add_files("org/broken-json", {"config.json": b'{"hidden_size": 4096,'})
    hub_cache.add_files("org/array", {"config.json": b"[1, 2]"})
    catalog = catalog_of(hub_cache)
    assert catalog.entries == ()
    why = {s.name: s.reason for s in catalog.skipped}
    assert why["org/readme-only"] == (
        "not a model folder (no config.json, no *.safetensors): it holds README.md"
    )
    assert why["org/gguf"].startswith("GGUF files only (model-q4_k_m.gguf): `vramscope inspect`")
    assert why["org/adapter"].startswith("no config.json next to the *.safetensors")
    assert why["org/tokenizer"] == (
        "config.json has no model architecture (no hidden size or layer count)"
    )
    assert "config.json is not valid JSON" in why["org/broken-json"]
    assert "top level is a JSON array, not an object" in why["org/array"]


def test_older_snapshots_are_noted_not_listed_twice(hub_cache: HubCache) -> None:
    hub_cache.add_tiny("org/m", commit="1" * 40, refs=())
    current = hub_cache.add_tiny("org/m", commit="2" * 40)
    catalog = catalog_of(hub_cache)
    assert [e.path for e in catalog.entries] == [current]
    (older,) = catalog.skipped
    assert older.reason == "older snapshot; the catalog shows 22222222 (main)"


# --- Model folders ------------------------------------------------------------------------


def test_models_dirs_hold_flat_and_org_folders(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write_tiny_model(root / "plain")
    write_skeleton(load_profile(LLAMA_4BIT), root / "mlx-community" / "Llama-4bit")
    write_tiny_model(root / "mlx-community" / "tiny")
    (root / "mlx-community" / "notes").mkdir()
    (root / ".hidden").mkdir()
    (root / "README.md").write_text("my models")
    catalog = catalog_of(None, root)
    entries = by_name(catalog)
    assert sorted(entries) == ["mlx-community/Llama-4bit", "mlx-community/tiny", "plain"]
    assert {e.origin for e in catalog.entries} == {ORIGIN_FOLDER}
    assert entries["mlx-community/Llama-4bit"].weight_bytes == 4_517_404_672
    assert entries["plain"].weights_on_disk is True
    assert reasons(catalog) == {
        "notes": "not a model folder (no config.json, no *.safetensors): it is empty"
    }


def test_a_models_dir_that_is_itself_a_model_or_a_cache(tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "just-one")
    cache = HubCache(tmp_path / "copied-cache")
    cache.add_tiny("org/cached")
    catalog = catalog_of(None, model, cache.root)
    assert {(e.name, e.origin) for e in catalog.entries} == {
        ("just-one", ORIGIN_FOLDER),
        ("org/cached", ORIGIN_HF_CACHE),
    }


def test_bad_models_dirs_are_skipped(tmp_path: Path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    catalog = catalog_of(None, tmp_path / "missing", a_file)
    assert catalog.entries == ()
    assert reasons(catalog) == {
        "missing": "models folder: no such file or directory",
        "file.txt": "models folder: not a folder",
    }


def test_env_dirs_come_after_flags_and_each_folder_counts_once(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_tiny_model(first / "m1")
    write_tiny_model(second / "m2")
    os.symlink(first, tmp_path / "link-to-a")
    env = {"VRAMSCOPE_MODELS_DIR": os.pathsep.join([str(second), str(tmp_path / "link-to-a")])}
    catalog = build_catalog([first], include_hf_cache=False, include_profiles=False, env=env)
    assert catalog.models_dirs == (first, second)
    assert sorted(e.name for e in catalog.entries) == ["m1", "m2"]


def test_a_changed_model_is_read_again(tmp_path: Path) -> None:
    folder = write_tiny_model(tmp_path / "models" / "m")
    assert catalog_of(None, tmp_path / "models").entries[0].max_position_embeddings == 2048
    config = dict(TINY_CONFIG, max_position_embeddings=8192)
    (folder / "config.json").write_text(json.dumps(config, indent=4))
    assert catalog_of(None, tmp_path / "models").entries[0].max_position_embeddings == 8192


def test_nothing_raises_when_everything_is_wrong_at_once(
    hub_cache: HubCache, tmp_path: Path
) -> None:
    hub_cache.add_tiny("org/good")
    hub_cache.add_files("org/empty", {})
    snap = hub_cache.add_profile(LLAMA_4BIT, as_repo="org/bad-header")
    (snap / "model.safetensors").unlink()
    (snap / "model.safetensors").write_bytes(b"\xff" * 8)  # header length past the end
    (hub_cache.root / "models--org--file").write_text("not a folder")
    (hub_cache.root / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55")
    models = tmp_path / "models"
    models.mkdir()
    (models / "weird name\n").mkdir()
    catalog = build_catalog([models, tmp_path / "nope"], hf_cache_dir=hub_cache.root, env={})
    names = {e.name for e in catalog.entries}
    assert "org/good" in names and LLAMA_4BIT in names  # the profile is still there
    assert "org/bad-header" in names  # a bad header falls back, as mlxcel does
    assert len(catalog.skipped) >= 4
