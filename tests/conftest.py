"""Shared test setup: every test in its own home, with a clean estimator environment."""

from __future__ import annotations

import functools
import gc
import inspect
import json
import os
import re
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.catalog.profiles import load_profile
from tests.installed import need
from tests.model_writers import write_skeleton

# A suite started in the background of a shell without job control (`make test &` in
# a script, `nohup`) inherits SIGINT ignored, and so would every vramscope the tests
# start: the Ctrl-C tests then wait on a process that never sees it. A handler here
# makes the children start with the default again (exec resets handled signals).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _still_ignored(signum: int, frame: object) -> None:
    """The suite itself goes on ignoring the signal it inherited ignored."""


# Under `nohup` SIGHUP is ignored, and so it was in every explorer the tests start: one
# signalled in its first instant, before its own handler is in, ignored it and ran on
# (the early-signal sweep's "shell at 0.000 s" hang). A handler that does nothing keeps
# nohup's promise for the suite and lets the children start with the default.
for _signum in (signal.SIGHUP, signal.SIGTERM):
    if signal.getsignal(_signum) is signal.SIG_IGN:
        signal.signal(_signum, _still_ignored)

ESTIMATOR_ENV = (
    "MLXCEL_HEADROOM_FACTOR",
    "MLXCEL_ACTIVATION_MULT",
    "MLXCEL_MEMORY_LIMIT",
    "MLX_ROCM_MAX_INFLIGHT_MB",
    "VRAMSCOPE_MODELS_DIR",
    "NO_COLOR",
)


HUB_ENV = (
    "HF_ENDPOINT",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_OFFLINE",
)
"""The caller's Hub settings: a test that needs one sets its own (tests/hub_server.py)."""

TERMINAL_ENV = ("COLUMNS", "LINES")
"""pytest-xdist's workers export COLUMNS=80 LINES=24, which Textual and Rich take over a
terminal's own size: a child on a pty of another size drew at 80x24 under -n only."""

OWN_FOLDERS = {
    "XDG_CACHE_HOME": ".cache",
    "XDG_STATE_HOME": ".local/state",
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "HF_HOME": ".cache/huggingface",
    "HF_HUB_CACHE": ".cache/huggingface/hub",
}
"""Where each folder a test may write lies under its own HOME (the XDG defaults)."""


@pytest.fixture(autouse=True)
def _own_home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test in its own HOME, XDG folders, HF cache and vramscope store.

    A developer's real home (a Hub store, a history, calibrations, an HF cache whose
    repos carry a built-in profile's name) can then never answer for a test, nor be
    written by one; children inherit it. The Hub is off (HF_HUB_OFFLINE=1) unless a
    test points HF_ENDPOINT at its own stand-in and turns it on. mlxcel's tests clear
    the estimator's variables too: the estimate must not depend on the caller's shell.
    The home is a folder beside the test's tmp_path, made empty; its subfolders are
    made by whatever writes there.
    """
    home = tmp_path_factory.mktemp("home", numbered=True)
    monkeypatch.setenv("HOME", str(home))
    for name, below in OWN_FOLDERS.items():
        monkeypatch.setenv(name, str(home / below))
    for name in (*ESTIMATOR_ENV, *HUB_ENV, *TERMINAL_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


# `make test-fast` deselects these: snapshots (SVG comparisons) and tests that start
# another process (measuring children, CLI subprocesses, fresh interpreters).
_SPAWNS = re.compile(r"subprocess\.|sys\.executable|Popen|modules_after\(|tiny_model")


def _spawns_a_process(item: pytest.Item) -> bool:
    if "tests/hip_backend/" in Path(str(item.fspath)).as_posix():
        return True  # the measuring engine: real loads in child processes
    if {"tiny_model", "tiny_llama"} & set(getattr(item, "fixturenames", ())):
        return True
    function = getattr(item, "function", None)
    return function is not None and _source_spawns(function)


@functools.cache
def _source_spawns(function: Callable[..., Any]) -> bool:
    """Once per test function, not per parametrized item: reading the source of every
    item took 1.3 s of each worker's collection."""
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    return bool(_SPAWNS.search(source))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The opt-in llama.cpp tests run only where `make test-llama` names its build.
    tool = os.environ.get("VRAMSCOPE_LLAMA_FIT_PARAMS", "")
    if not (tool and Path(tool).is_file()):
        skipped = [i for i in items if i.get_closest_marker("llama_cpp")]
        if skipped:
            config.hook.pytest_deselected(items=skipped)
            items[:] = [i for i in items if not i.get_closest_marker("llama_cpp")]
    for item in items:
        if "snap_compare" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.snapshot)
        if _spawns_a_process(item):
            item.add_marker(pytest.mark.child_process)
    # Under --dist loadfile the files sent last decide when the run ends. xdist's own
    # order (most tests first) sent the one-test files that take a minute (the one-answer
    # property, the GPU check's dry run, the held-out calibration) last, and one worker
    # ran on alone for a minute. Files that start processes or are slow go first (make
    # test passes --no-loadscope-reorder), then the others, most tests first.
    heavy = {i.path for i in items if i.get_closest_marker("slow") or _marked_child(i)}
    counts = Counter(item.path for item in items)
    items.sort(key=lambda item: (item.path not in heavy, -counts[item.path]))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Keep the collector off what every test shares, and run it less often.

    A worker holds Textual, pytest and often torch and hypothesis: each full collection
    walked all of it. Pilot tests allocate thousands of short-lived objects per repaint,
    so with the default thresholds (700, 10, 10) the collector ran hundreds of times a
    test. Frozen after collection and at 20,000 allocations a young collection, four
    Pilot files took 45.8 s of CPU against 71.8 s. Cycles are still collected: a test
    that needs a collection at a given point calls gc.collect() itself.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def _marked_child(item: pytest.Item) -> bool:
    return item.get_closest_marker("child_process") is not None


# -- model folders shared by the core, engine and CLI tests ---------------------------


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


@pytest.fixture(scope="session")
def mlx_available() -> None:
    """Skip when mlx / mlx-lm are not installed (they are in the test extra). Found, not
    imported: most of its users run MLX in a child process (tests/installed.py)."""
    need("mlx", "mlx_lm")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory, mlx_available: None) -> Path:
    """A 2-layer Llama-3 style model in MLX 4-bit (F16 scales), as mlx-community ships."""
    from tests.hip_backend.mlx_models import LLAMA_CONFIG, write_mlx_model

    return write_mlx_model(tmp_path_factory.mktemp("models") / "tiny-llama-4bit", LLAMA_CONFIG)
