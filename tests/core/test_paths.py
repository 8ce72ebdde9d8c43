"""Where vramscope keeps its files: the XDG folders, from the environment given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.paths import cache_dir, hub_store_dir, models_dirs_from_env, state_dir


def test_an_absolute_xdg_folder_is_honoured_and_a_relative_one_is_not(tmp_path: Path) -> None:
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "vramscope"
    assert state_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "vramscope"
    assert hub_store_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "vramscope" / "hub"
    assert cache_dir({"XDG_CACHE_HOME": "rel"}) == Path.home() / ".cache" / "vramscope"
    assert state_dir({"XDG_STATE_HOME": ""}) == Path.home() / ".local" / "state" / "vramscope"


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
    assert models_dirs_from_env({"VRAMSCOPE_MODELS_DIR": raw}) == [
        tmp_path / "a",
        Path.home() / "models",
    ]
