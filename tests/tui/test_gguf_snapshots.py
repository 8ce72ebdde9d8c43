"""The explorer on a GGUF model (#40), compared with reviewed SVG snapshots: llama.cpp's
controls in place of mlxcel's, the load split between the device and the host, the
`llama-server` line, at 160x48 and 80x24.

The model is a synthesized gemma3 (`tests/gguf_llama_models.py`) named by a path relative
to a temporary folder (the working directory here), so the lines that show it are the
same on every machine. Update with `make snapshot-update` only after looking at the report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.estimate.available import AvailableMemory
from tests.gguf_llama_models import write_model
from tests.tui.helpers import build_app, fixed_deps, settle_then
from tui.app import VramscopeApp

MODEL = "models/gemma3-GGUF/golden-gemma3.gguf"


@pytest.fixture
def gemma3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    write_model(tmp_path / "models" / "gemma3-GGUF", "gemma3")
    return MODEL


def app_on(model: str) -> VramscopeApp:
    deps = fixed_deps(available=AvailableMemory(24 << 20, "test"))
    return build_app(deps, model=model, memory_limit=24 << 20, max_tokens=8192)


class TestGgufExplorer:
    def test_gguf_160x48(self, snap_compare, gemma3: str) -> None:
        """Does not fit whole in 24 MiB: the device/host split, the largest -ngl, both lines."""
        assert snap_compare(app_on(gemma3), terminal_size=(160, 48), run_before=settle_then())

    def test_gguf_80x24(self, snap_compare, gemma3: str) -> None:
        """The narrow layout: llama.cpp's controls, then the load."""
        assert snap_compare(app_on(gemma3), terminal_size=(80, 24), run_before=settle_then())

    def test_gguf_partial_offload_160x48(self, snap_compare, gemma3: str) -> None:
        """Five layers of seven on the GPU, q8_0 caches, two slots."""
        keys = ("g", "left", "left", "left", "escape", "K", "K", "V", "V", "P", "2", "enter")
        run = settle_then(*keys, "escape")
        assert snap_compare(app_on(gemma3), terminal_size=(160, 48), run_before=run)
