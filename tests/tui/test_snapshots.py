"""Screens of the explorer, compared with reviewed SVG snapshots.

Every app here is built over the fixed world of `helpers.fixed_deps` (no GPU
found, 32 GiB in /proc/meminfo, built-in profiles only) or a device preset, so
the snapshots are the same on every machine. Update them with
`make snapshot-update` only after looking at the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from core.answer.quantization import Quantization
from core.catalog.resolve import Catalog
from tests.tui.helpers import build_app, fixed_deps, settle, settle_then, wait_for
from tests.tui.test_robustness import folder_entry, write_broken_model
from tui.screens.fits_screen import FitsScreen

MEDIUM = (120, 40)


class TestStartUp:
    def test_start_up(self, snap_compare) -> None:
        """No GPU found: ROCm chosen (and said so), this machine's memory, default budget."""
        assert snap_compare(build_app(), terminal_size=MEDIUM, run_before=settle_then())

    def test_layout_80x24(self, snap_compare) -> None:
        """The narrow layout: controls, then the whole breakdown down to the limits."""
        app = build_app(preset="gfx1151")
        assert snap_compare(app, terminal_size=(80, 24), run_before=settle_then())

    def test_layout_60x20(self, snap_compare) -> None:
        """The smallest layout: the summary keeps the model's own name, the footer whole keys."""
        app = build_app(preset="gfx1151")
        assert snap_compare(app, terminal_size=(60, 20), run_before=settle_then())

    def test_layout_160x48(self, snap_compare) -> None:
        """The wide layout: models, controls beside the command lines, estimate, chart."""
        app = build_app(preset="gfx1151")
        assert snap_compare(app, terminal_size=(160, 48), run_before=settle_then())


class TestInflightBudget:
    def test_budget_256(self, snap_compare) -> None:
        app = build_app(preset="gfx1151")
        run = settle_then("i", "left", "left", "left")
        assert snap_compare(app, terminal_size=MEDIUM, run_before=run)

    def test_budget_4096(self, snap_compare) -> None:
        app = build_app(preset="gfx1151")
        run = settle_then("i", "right", "right", "right", "right")
        assert snap_compare(app, terminal_size=MEDIUM, run_before=run)

    def test_budget_0(self, snap_compare) -> None:
        """No in-flight row; the hint says the unbounded case is not modelled."""
        app = build_app(preset="gfx1151")
        assert snap_compare(app, terminal_size=MEDIUM, run_before=settle_then("i", "home"))

    def test_cuda_backend(self, snap_compare) -> None:
        """No in-flight row; the budget control is inactive and says why."""
        app = build_app(preset="gfx1151")
        assert snap_compare(app, terminal_size=MEDIUM, run_before=settle_then("n"))


class TestEstimates:
    def test_int8_kv(self, snap_compare) -> None:
        app = build_app(preset="gfx1151")
        assert snap_compare(app, terminal_size=MEDIUM, run_before=settle_then("k"))

    def test_does_not_fit(self, snap_compare) -> None:
        """The 8B at its full 131,072-token context on a 24 GiB card."""
        app = build_app(preset="rx7900xtx")
        assert snap_compare(app, terminal_size=MEDIUM, run_before=settle_then("t", "end"))


class TestScreens:
    def test_help_screen(self, snap_compare) -> None:
        app = build_app(preset="gfx1151")
        assert snap_compare(app, terminal_size=(80, 24), run_before=settle_then("question_mark"))

    def test_broken_model_error_in_place(
        self, snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A model folder that vanished: the error sits where the breakdown was, and the
        controls (here the backend, switched afterwards) keep working."""
        monkeypatch.chdir(tmp_path)
        deps = fixed_deps()
        builtin = deps.build_catalog()
        gone = folder_entry(Path("models/vanished-model"), "vanished-model")
        broken = folder_entry(write_broken_model(tmp_path), "broken-model")
        deps = deps.__class__(
            **{**deps.__dict__, "build_catalog": lambda: Catalog((gone, broken, *builtin.entries))}
        )
        app = build_app(deps, preset="gfx1151")
        run = settle_then("slash", *"vanished", "enter", "escape", "n")
        assert snap_compare(app, terminal_size=MEDIUM, run_before=run)

    def test_broken_model_warnings(
        self, snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Bad config and a truncated header: warnings above a fallback estimate."""
        monkeypatch.chdir(tmp_path)
        deps = fixed_deps()
        builtin = deps.build_catalog()
        broken = folder_entry(write_broken_model(tmp_path), "broken-model")
        deps = deps.__class__(
            **{**deps.__dict__, "build_catalog": lambda: Catalog((broken, *builtin.entries))}
        )
        app = build_app(deps, preset="gfx1151")
        run = settle_then("slash", *"broken", "enter", "escape")
        assert snap_compare(app, terminal_size=MEDIUM, run_before=run)


async def fits_done(pilot: Pilot[Any]) -> None:
    """Settle, press f, wait for the Fits view's last row."""
    await settle(pilot)
    await pilot.press("f")
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, FitsScreen) and app.screen.done, "rows")
    await pilot.pause()


class TestFitsView:
    def test_fits_160x48(self, snap_compare) -> None:
        """Every built-in profile stored and as 8/4-bit what-ifs on a 24 GiB card, ranked."""
        app = build_app(preset="rx7900xtx")
        assert snap_compare(app, terminal_size=(160, 48), run_before=fits_done)

    def test_fits_80x24(self, snap_compare) -> None:
        """The narrow layout: the answer columns only (model names cut with `…`), the
        heading and notes wrap, every footer key whole."""
        app = build_app(preset="rx7900xtx")
        assert snap_compare(app, terminal_size=(80, 24), run_before=fits_done)

    def test_fits_120x40(self, snap_compare) -> None:
        """The medium layout: WEIGHTS and FROM go, MAX CONTEXT stays whole."""
        app = build_app(preset="rx7900xtx")
        assert snap_compare(app, terminal_size=MEDIUM, run_before=fits_done)

    def test_quantize_as_4_bit(self, snap_compare) -> None:
        """Qwen2.5-7B as mlx-lm's 4-bit what-if: the weights and total say whose they are."""
        app = build_app(model="Qwen/Qwen2.5-7B-Instruct", preset="rx7900xtx")

        async def run(pilot: Pilot[Any]) -> None:
            await settle(pilot)
            pilot.app.explorer.update(quantize_as=Quantization.MLX_4BIT)
            await settle(pilot)

        assert snap_compare(app, terminal_size=(160, 48), run_before=run)
