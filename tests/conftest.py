"""Shared test setup: a clean estimator environment for every test."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

ESTIMATOR_ENV = (
    "MLXCEL_HEADROOM_FACTOR",
    "MLXCEL_ACTIVATION_MULT",
    "MLXCEL_MEMORY_LIMIT",
    "MLX_ROCM_MAX_INFLIGHT_MB",
    "VRAMSCOPE_MODELS_DIR",
    "NO_COLOR",
)


@pytest.fixture(scope="session")
def _empty_hf_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("empty-hf-home")


@pytest.fixture(autouse=True)
def _clean_estimator_env(monkeypatch: pytest.MonkeyPatch, _empty_hf_home: Path) -> None:
    """mlxcel's tests clear these too: the estimate must not depend on the caller's shell.

    The Hugging Face cache points at an empty folder, so a developer's real cache can
    never take over a built-in profile name; tests that need a cache build their own.
    """
    for name in ESTIMATOR_ENV:
        monkeypatch.delenv(name, raising=False)
    # The catalog's on-disk cache never touches the real ~/.cache.
    monkeypatch.setenv("XDG_CACHE_HOME", str(_empty_hf_home.parent / "xdg-cache"))
    monkeypatch.setenv("HF_HOME", str(_empty_hf_home))
    monkeypatch.setenv("HF_HUB_CACHE", str(_empty_hf_home / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# `make test-fast` deselects these: snapshots (SVG comparisons) and tests that start
# another process (measuring children, CLI subprocesses, fresh interpreters).
_SPAWNS = re.compile(r"subprocess\.|sys\.executable|Popen|modules_after\(|tiny_model")


def _spawns_a_process(item: pytest.Item) -> bool:
    if "tests/hip_backend/" in Path(str(item.fspath)).as_posix():
        return True  # the measuring engine: real loads in child processes
    if "tiny_model" in getattr(item, "fixturenames", ()):
        return True
    function = getattr(item, "function", None)
    try:
        source = inspect.getsource(function) if function is not None else ""
    except (OSError, TypeError):
        return False
    return bool(_SPAWNS.search(source))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "snap_compare" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.snapshot)
        if _spawns_a_process(item):
            item.add_marker(pytest.mark.child_process)
