"""Fixtures for core tests: real model folders written from the built-in profiles."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.catalog.profiles import load_profile, write_skeleton


@pytest.fixture
def skeleton(tmp_path: Path) -> Callable[..., Path]:
    """Write a built-in profile as a header-only model folder (sparse data region)."""

    def make(repo_id: str, layout: str = "headers", name: str | None = None) -> Path:
        dest = tmp_path / (name or repo_id.split("/")[-1] + "-" + layout)
        return write_skeleton(load_profile(repo_id), dest, layout=layout)

    return make


@pytest.fixture
def model_dir(tmp_path: Path) -> Callable[..., Path]:
    """Write a model folder from a config dict and optional extra files."""

    def make(
        config: dict[str, Any] | None = None,
        files: dict[str, bytes] | None = None,
        name: str = "model",
    ) -> Path:
        dest = tmp_path / name
        dest.mkdir()
        if config is not None:
            (dest / "config.json").write_text(json.dumps(config))
        for fname, data in (files or {}).items():
            (dest / fname).write_bytes(data)
        return dest

    return make
