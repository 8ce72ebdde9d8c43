"""Fixtures for hip_backend tests: real model folders written by mlx, run on the CPU.

Every test here keeps the measurement history in a temporary state directory.
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hip_backend.mlx_models import SWEEP_CONFIG, write_random_quantized_model


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """History goes to a temporary XDG_STATE_HOME, never the user's."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture(scope="session")
def sweep_model(tmp_path_factory: pytest.TempPathFactory, mlx_available: None) -> Path:
    """48 layers of wide MLPs in MLX 4-bit: 188 MB on disk, 668 MiB of copies per prefill."""
    dest = tmp_path_factory.mktemp("models") / "sweep-4bit"
    return write_random_quantized_model(dest, SWEEP_CONFIG)


@pytest.fixture
def copy_model(tmp_path: Path) -> Callable[[Path], Path]:
    """A private copy of a model folder that a test may damage."""

    def make(src: Path) -> Path:
        dest = tmp_path / (src.name + "-copy")
        shutil.copytree(src, dest)
        return dest

    return make


def write_skeleton_file(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> int:
    """A real safetensors header over a sparse data region (no weights on disk)."""
    sizes = {"F16": 2, "BF16": 2, "F32": 4, "U32": 4}
    header: dict[str, Any] = {"__metadata__": {"format": "mlx"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        fh.truncate(8 + len(raw) + offset)
    return offset
