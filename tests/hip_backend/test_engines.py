"""The engine registry and the shared pieces: every engine runs through its package's
`measure`, the mlx engine never loads the torch engine, and every child is spawned
the one way (hip_backend/spawn.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.measurement.engine import MEASURING_ENGINES, Engine
from hip_backend import is_available
from hip_backend.engines import ENGINES, engine_measure
from hip_backend.spawn import PROJECT_ROOT, child_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("engine", MEASURING_ENGINES)
def test_every_engine_has_one_registry_line_and_a_measure(engine: Engine) -> None:
    assert ENGINES[engine].package == f"hip_backend.{engine.value}_engine"
    assert callable(engine_measure(engine))
    assert is_available(engine) == is_available(engine.value)


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return set(json.loads(out))


def test_the_mlx_engine_and_the_launcher_never_load_the_torch_engine() -> None:
    for statement in ("import hip_backend.mlx_engine", "import hip_backend, hip_backend.job"):
        loaded = _loaded_after(statement)
        assert not {m for m in loaded if m.startswith("hip_backend.torch_engine")}, statement
        assert "torch" not in loaded


def test_a_child_imports_this_checkout_and_keeps_what_the_user_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    env = child_env(defaults={"OMP_WAIT_POLICY": "PASSIVE", "X_DEFAULT": "1"})
    assert env["PYTHONPATH"] == os.pathsep.join((str(PROJECT_ROOT), "/elsewhere"))
    assert (env["OMP_WAIT_POLICY"], env["X_DEFAULT"]) == ("ACTIVE", "1")
    bare = child_env(overrides={"TMPDIR": "/t"}, import_path=False)
    assert bare["PYTHONPATH"] == "/elsewhere" and bare["TMPDIR"] == "/t"
    assert PROJECT_ROOT == ROOT
