"""Where vramscope keeps its files: the XDG folders, from the environment given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.catalog.resolve import build_catalog
from core.errors import NoHomeError
from core.paths import (
    cache_dir,
    hf_cache_dir,
    hub_store_dir,
    hub_store_dir_or_none,
    models_dirs_from_env,
    state_dir,
)
from tests.core.catalog.catalog_fixtures import HubCache


def test_an_absolute_xdg_folder_is_honoured_and_a_relative_one_is_not(tmp_path: Path) -> None:
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "vramscope"
    assert state_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "vramscope"
    assert hub_store_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "vramscope" / "hub"
    home = {"HOME": str(tmp_path / "home")}
    assert cache_dir({**home, "XDG_CACHE_HOME": "rel"}) == tmp_path / "home/.cache/vramscope"
    state = state_dir({**home, "XDG_STATE_HOME": ""})
    assert state == tmp_path / "home/.local/state/vramscope"


@pytest.mark.parametrize("value", ["ABSOLUTE", "relative/dir", None])
def test_the_process_environment_gives_the_same_folders_as_a_mapping(
    value: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read from os.environ the folders come from platformdirs; a mapping is read here:
    # both must follow one rule.
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME"):
        text = str(tmp_path / name) if value == "ABSOLUTE" else value
        if text is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, text)
    env = dict(os.environ)
    assert cache_dir() == cache_dir(env)
    assert state_dir() == state_dir(env)


def test_models_dirs_are_split_like_path_and_expanded(tmp_path: Path) -> None:
    raw = os.pathsep.join([str(tmp_path / "a"), " ", "~/models"])
    env = {"VRAMSCOPE_MODELS_DIR": raw, "HOME": str(tmp_path / "home")}
    assert models_dirs_from_env(env) == [tmp_path / "a", tmp_path / "home" / "models"]


# -- an environment handed in is the whole environment: never the process's home ------


@pytest.fixture
def used_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process's HOME, holding a Hub store and an HF cache, as a user's would."""
    home = tmp_path / "used-home"
    HubCache(home / ".cache" / "huggingface" / "hub").add_tiny("user/cached")
    HubCache(home / ".cache" / "vramscope" / "hub").add_tiny("user/stored")
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "HF_HOME", "HF_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_a_mapping_without_home_names_no_folder_of_the_process(used_home: Path) -> None:
    for folder in (cache_dir, state_dir, hub_store_dir, hf_cache_dir):
        with pytest.raises(NoHomeError, match="no absolute HOME"):
            folder({})
    with pytest.raises(NoHomeError, match="XDG_STATE_HOME"):
        state_dir({"HOME": "relative"})
    assert hub_store_dir_or_none({}) is None
    # ~/x in VRAMSCOPE_MODELS_DIR names no folder of that environment: left out.
    assert models_dirs_from_env({"VRAMSCOPE_MODELS_DIR": f"~/m{os.pathsep}/abs"}) == [Path("/abs")]
    # The process's own environment still finds its home, as platformdirs does.
    assert cache_dir() == used_home / ".cache" / "vramscope"
    assert hf_cache_dir() == used_home / ".cache" / "huggingface" / "hub"


def test_the_hf_cache_needs_a_home_only_where_huggingface_hub_would(tmp_path: Path) -> None:
    assert hf_cache_dir({"HF_HUB_CACHE": str(tmp_path / "c")}) == tmp_path / "c"
    assert hf_cache_dir({"HF_HOME": str(tmp_path / "h")}) == tmp_path / "h" / "hub"
    xdg = {"XDG_CACHE_HOME": str(tmp_path / "x")}
    assert hf_cache_dir(xdg) == tmp_path / "x" / "huggingface" / "hub"
    home = {"HOME": str(tmp_path / "home")}
    assert hf_cache_dir(home) == tmp_path / "home" / ".cache" / "huggingface" / "hub"
    assert hf_cache_dir({**home, "HF_HOME": "~/hf"}) == tmp_path / "home" / "hf" / "hub"


def test_a_catalog_of_an_empty_environment_lists_nothing_of_the_users_home(
    used_home: Path,
) -> None:
    # What made 23 tests fail on a used machine: build_catalog(env={}) listed the real
    # home's Hub store and HF cache.
    names = {e.name for e in build_catalog(env={}, use_cache=False).entries}
    assert "user/cached" not in names and "user/stored" not in names
    assert build_catalog(env={}, use_cache=False).hf_cache_dir is None
    # The same home handed in explicitly is read: the two repos are there to be found.
    mine = {e.name for e in build_catalog(env={"HOME": str(used_home)}, use_cache=False).entries}
    assert {"user/cached", "user/stored"} <= mine
