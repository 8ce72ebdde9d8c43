"""One way to name a model everywhere: folder paths, profile names, cached repo ids,
folder names, and errors that list the closest names."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.catalog.profiles import load_profile
from core.catalog.resolve import (
    ORIGIN_BUILTIN,
    ORIGIN_FOLDER,
    ORIGIN_HF_CACHE,
    build_catalog,
    match_entry,
    resolve_entry,
    resolve_model,
)
from core.errors import ModelError, ModelNotFoundError, VramscopeError
from core.estimate.weights import WeightsSource
from core.model.weight_files import INDEX_FILE
from tests.core.catalog.catalog_fixtures import HubCache, write_tiny_model
from tests.model_writers import write_skeleton

LLAMA_4BIT = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"


@pytest.fixture
def hub_cache(tmp_path: Path) -> HubCache:
    return HubCache(tmp_path / "hf" / "hub")


@pytest.fixture
def no_cache(tmp_path: Path) -> dict[str, str]:
    """An environment whose HF cache does not exist and with no models dirs."""
    return {"HF_HUB_CACHE": str(tmp_path / "empty-hub")}


def test_a_profile_name_reads_the_profile(no_cache: dict[str, str]) -> None:
    entry = resolve_entry(LLAMA_4BIT, env=no_cache)
    assert (entry.origin, entry.profile_id) == (ORIGIN_BUILTIN, LLAMA_4BIT)
    snap = resolve_model(LLAMA_4BIT, env=no_cache)
    assert snap.display == LLAMA_4BIT and snap.weights.bytes == 4_517_404_672


def test_a_folder_path_always_wins_and_keeps_its_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_skeleton(load_profile(LLAMA_4BIT), tmp_path / LLAMA_4BIT)
    (folder / INDEX_FILE).write_text(json.dumps({"weight_map": {"x": "gone.safetensors"}}))
    monkeypatch.chdir(tmp_path)
    snap = resolve_model(LLAMA_4BIT)  # the relative path exists, so it is a folder
    assert snap.display == LLAMA_4BIT
    assert any("gone.safetensors" in w for w in snap.warnings)
    assert resolve_entry(LLAMA_4BIT).origin == ORIGIN_FOLDER


def test_a_cached_repo_wins_over_the_profile_of_the_same_name(hub_cache: HubCache) -> None:
    snapshot = hub_cache.add_profile(LLAMA_4BIT)
    env = {"HF_HUB_CACHE": str(hub_cache.root)}
    entry = resolve_entry(LLAMA_4BIT, env=env)
    assert (entry.origin, entry.path) == (ORIGIN_HF_CACHE, snapshot)
    assert resolve_model(LLAMA_4BIT, env=env).display == LLAMA_4BIT
    # The same answer from a full catalog as from the one-repo fast path.
    catalog = build_catalog(hf_cache_dir=hub_cache.root, env={})
    assert match_entry(catalog, LLAMA_4BIT) == entry


def test_an_unfinished_copy_leaves_the_profile_usable(hub_cache: HubCache) -> None:
    hub_cache.add_profile(LLAMA_4BIT)
    (hub_cache.repo_path(LLAMA_4BIT) / "blobs" / "abc.incomplete").write_bytes(b"x")
    entry = resolve_entry(LLAMA_4BIT, hf_cache_dir=hub_cache.root, env={})
    assert entry.origin == ORIGIN_BUILTIN


def test_an_unfinished_download_says_why_it_cannot_be_used(hub_cache: HubCache) -> None:
    hub_cache.add_tiny("org/half")
    (hub_cache.repo_path("org/half") / "blobs" / "abc.incomplete").write_bytes(b"x")
    with pytest.raises(ModelError) as err:
        resolve_model("org/half", hf_cache_dir=hub_cache.root, env={})
    assert not isinstance(err.value, ModelNotFoundError)
    assert str(err.value).startswith("org/half: found at ")
    assert "download not finished" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("typed", "picked"),
    [
        ("Meta-Llama-3.1-8B-Instruct-4bit", LLAMA_4BIT),
        ("mlx-community/meta-llama-3.1-8b-instruct-4bit", LLAMA_4BIT),
        ("qwen3-30b-a3b-4bit", "mlx-community/Qwen3-30B-A3B-4bit"),
        ("Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B"),
    ],
)
def test_short_and_differently_cased_names(
    typed: str, picked: str, no_cache: dict[str, str]
) -> None:
    assert resolve_entry(typed, env=no_cache).name == picked
    assert resolve_model(typed, env=no_cache).display == typed


def test_folder_names_in_models_dirs(tmp_path: Path, no_cache: dict[str, str]) -> None:
    write_tiny_model(tmp_path / "models" / "my-finetune")
    write_tiny_model(tmp_path / "models" / "org" / "other")
    entry = resolve_entry("my-finetune", [tmp_path / "models"], env=no_cache)
    assert (entry.origin, entry.path) == (ORIGIN_FOLDER, tmp_path / "models" / "my-finetune")
    env = dict(no_cache, VRAMSCOPE_MODELS_DIR=str(tmp_path / "models"))
    assert resolve_model("org/other", env=env).weights.source is WeightsSource.SAFETENSORS_HEADER
    with pytest.raises(ModelNotFoundError):
        resolve_entry("my-finetune", env=no_cache)  # not without the folder


def test_ambiguous_names_list_the_candidates(hub_cache: HubCache) -> None:
    hub_cache.add_tiny("alice/tiny-chat")
    hub_cache.add_tiny("bob/tiny-chat")
    with pytest.raises(ModelError) as err:
        resolve_entry("tiny-chat", hf_cache_dir=hub_cache.root, env={})
    message = str(err.value)
    assert message.startswith("tiny-chat: ambiguous: 2 models match: alice/tiny-chat (HF cache")
    assert "bob/tiny-chat (HF cache" in message and "\n" not in message
    assert resolve_entry("bob/tiny-chat", hf_cache_dir=hub_cache.root, env={}).name == (
        "bob/tiny-chat"
    )


def test_two_folders_of_one_name_are_ambiguous(tmp_path: Path, no_cache: dict[str, str]) -> None:
    write_tiny_model(tmp_path / "a" / "twin")
    write_tiny_model(tmp_path / "b" / "twin")
    with pytest.raises(ModelError, match=r"ambiguous: 2 models match: twin \(folder .*/a/twin\)"):
        resolve_entry("twin", [tmp_path / "a", tmp_path / "b"], env=no_cache)


def test_unknown_repo_ids_say_how_to_get_them(no_cache: dict[str, str]) -> None:
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model("mlx-community/Llama-3-8B-Instruct-4bit", env=no_cache)
    message = str(err.value)
    assert message.startswith("mlx-community/Llama-3-8B-Instruct-4bit: no such model: ")
    assert f"not in the HF cache ({no_cache['HF_HUB_CACHE']})" in message
    assert "closest: mlx-community/Meta-Llama-3.1-8B-Instruct-4bit" in message
    assert message.endswith(
        "vramscope never downloads: get it with "
        "`hf download mlx-community/Llama-3-8B-Instruct-4bit`, then retry"
    )


def test_unknown_short_names_list_the_closest(no_cache: dict[str, str]) -> None:
    with pytest.raises(ModelNotFoundError) as err:
        resolve_entry("phi3", env=no_cache)
    assert "closest: microsoft/Phi-3-mini-4k-instruct" in str(err.value)
    assert str(err.value).endswith("`vramscope models` lists every name")


@pytest.mark.parametrize("typed", ["./nope", "/no/such/model", "~/nope-vramscope", "a/b/c"])
def test_paths_that_do_not_exist(typed: str, no_cache: dict[str, str]) -> None:
    with pytest.raises(ModelNotFoundError, match="no such file or folder"):
        resolve_model(typed, env=no_cache)


def test_a_path_that_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelError, match="is not a folder"):
        resolve_model(str(tmp_path / "model.safetensors"))
    os.symlink("loop", tmp_path / "loop")
    with pytest.raises(ModelError, match="too many levels of symbolic links"):
        resolve_entry(str(tmp_path / "loop"))


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_any_typed_name_is_a_model_or_a_one_line_error(name: str) -> None:
    try:
        resolve_entry(name, env={"HF_HUB_CACHE": "/nonexistent/vramscope"})
    except VramscopeError as exc:
        assert "\n" not in str(exc).replace(name, "")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=20), max_size=3), st.text(max_size=20))
def test_any_models_dirs_give_a_catalog(dirs: list[str], env_value: str) -> None:
    env = {"VRAMSCOPE_MODELS_DIR": env_value, "HF_HUB_CACHE": "/nonexistent/vramscope"}
    catalog = build_catalog(dirs, env=env)
    assert len([e for e in catalog.entries if e.origin == ORIGIN_BUILTIN]) >= 12


@pytest.mark.parametrize("name", ["~\x00", "~\x00/model", "~a\x00b.gguf"])
def test_a_home_with_a_nul_is_no_such_model_never_a_value_error(
    name: str, no_cache: dict[str, str]
) -> None:
    # `~\x00` made os.path.expanduser ask the password database for a user named NUL,
    # whose ValueError escaped (found by the names property test).
    from core.catalog.gguf_source import _existing

    assert _existing(name) is None
    with pytest.raises(ModelNotFoundError):
        resolve_model(name, env=no_cache)


def test_an_entry_s_origin_is_a_kind_never_its_word() -> None:
    """`origin` is the `EntryOrigin` kind (#39): never equal to its word (a compare of
    it with `"folder"` is what `tests/test_typed_kinds.py` looks for), its word its
    value (what `models --json` writes), and kept through the catalog's disk cache."""
    from core.catalog.disk_cache import entry_from_json, entry_to_json
    from core.catalog.entry import EntryOrigin

    entry = resolve_entry(LLAMA_4BIT)
    assert entry.origin is EntryOrigin.BUILTIN and entry.origin != "built-in"
    assert entry.origin.value == "built-in" and entry.origin_label == "built-in profile"
    assert entry_from_json(json.loads(json.dumps(entry_to_json(entry)))) == entry
