"""The explorer on a GGUF model (#40), compared with reviewed SVG snapshots: llama.cpp's
controls in place of mlxcel's, the load split between the device and the host, the
`llama-server` line, at 160x48 and 80x24.

The model is a synthesized gemma3 (`tests/gguf_llama_models.py`) named by a path relative
to a temporary folder (the working directory here), so the lines that show it are the
same on every machine. Update with `make snapshot-update` only after looking at the report.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from core.catalog.entry import Catalog
from core.estimate.available import AvailableMemory
from tests.gguf_llama_models import write_model, write_quant
from tests.tui.helpers import build_app, fixed_deps, settle, settle_then, wait_for
from tui.app import VramscopeApp

MODEL = "models/gemma3-GGUF/golden-gemma3.gguf"


@pytest.fixture
def gemma3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    write_model(tmp_path / "models" / "gemma3-GGUF", "gemma3")
    return MODEL


def app_on(model: str, models_dir: str | None = None) -> VramscopeApp:
    deps = fixed_deps(available=AvailableMemory(24 << 20, "test"))
    if models_dir is not None:  # relative: the rows name the files the same everywhere
        catalog = Catalog(deps.build_catalog().entries, models_dirs=(Path(models_dir),))
        deps = replace(deps, build_catalog=lambda: catalog)
    return build_app(deps, model=model, memory_limit=24 << 20, max_tokens=8192)


@pytest.fixture
def two_quants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """One model (gemma3) as two quant files, Q8_0 and Q4_0, in a models folder."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "models" / "gemma3-GGUF"
    write_quant(folder, "gemma3", "Q4_0")
    return str(write_quant(folder, "gemma3", "Q8_0").relative_to(tmp_path))


async def gguf_fits_done(pilot: Pilot[Any]) -> None:
    """Settle, press f, wait for the Fits view's GGUF rows."""
    from tui.screens.fits_screen import FitsScreen

    await settle(pilot)
    await pilot.press("f")
    app = pilot.app

    def done() -> bool:
        screen = app.screen
        return isinstance(screen, FitsScreen) and bool(screen.gguf) and screen.done

    await wait_for(pilot, done, "the GGUF rows")
    await pilot.pause()


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

    def test_gguf_fits_view_160x48(self, snap_compare, two_quants: str) -> None:
        """`f` on a GGUF: the built-in profiles' table, then fit's GGUF table, one row per
        quant file of the models folder: Q4_0 fits in 24 MiB, Q8_0 does not (1,024
        tokens at -ngl all; 4 of 7 layers at 8,192), each file's path whole."""
        app = app_on(two_quants, models_dir="models")
        assert snap_compare(app, terminal_size=(160, 48), run_before=gguf_fits_done)

    def test_gguf_fits_view_60x20(self, snap_compare, two_quants: str) -> None:
        """A short, narrow terminal: the profiles' table keeps its header and two rows
        (it had a header over nothing), the GGUF rows keep the answer columns (GPU
        LAYERS and FILE go), the status keeps its counts."""
        app = app_on(two_quants, models_dir="models")
        assert snap_compare(app, terminal_size=(60, 20), run_before=gguf_fits_done)
