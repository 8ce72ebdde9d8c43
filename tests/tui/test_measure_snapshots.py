"""Measuring from the explorer, compared with reviewed SVG snapshots.

Deterministic by construction: the result is a constructed `MeasuredPeak`, the
run in flight is driven by the fake launcher with the clock frozen at 0 s, and
the history is written through `core.measurement.history` into a temporary state folder
under a temporary HOME (shown as `~/...`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from core.measurement.history import HistoryStore
from core.measurement.protocol import MeasureNotice, MeasureProgress
from core.measurement.result import MeasuredPeak
from tests.tui.fake_launcher import FakeLauncher
from tests.tui.helpers import LLAMA, build_app, fixed_deps, settle, wait_for
from tests.tui.test_history_screen import write_history
from tui.app import make_app
from tui.model.state import LaunchOptions
from tui.widgets.measured_panel import MeasuredPanel

WIDE = (160, 48)

PEAK = MeasuredPeak(
    model=LLAMA,
    device_kind="rocm",
    device_name="Radeon 8060S",
    peak_bytes=6_000_000_000,
    peak_kind="torch allocator peak of live tensors (reset before the load)",
    inflight_mib=1024,
    prompt_tokens=512,
    gen_tokens=128,
    synthetic_weights=True,
    load_seconds=2.41,
    prefill_tokens_per_s=812.5,
    decode_tokens_per_s=41.2,
    torch_version="2.13.0",
    arch="gfx1151",
    estimate_bytes=6_653_428_633,
    timestamp="2025-06-01T12:00:00+00:00",
)


def test_measured_result_beside_the_estimate(snap_compare: Any) -> None:
    """mlxcel's worked example at 640 tokens: the peak, the estimate, the margin, ✓, and
    the peak as a point on the chart."""
    app = make_app(fixed_deps(), LaunchOptions(preset="gfx1151", max_tokens=640), PEAK)
    assert snap_compare(app, terminal_size=WIDE, run_before=settle)


def test_an_mlx_peak_names_its_engine_and_is_a_round_mark(snap_compare: Any) -> None:
    """The same run measured by the mlx engine: the panel says `mlx engine` and what its
    peak counted, and the chart's point is `●` (torch's are `◆`)."""
    mlx = replace(PEAK, engine="mlx", peak_kind="mx.get_peak_memory()", device_kind="cpu")
    app = make_app(fixed_deps(), LaunchOptions(preset="gfx1151", max_tokens=640), mlx)
    assert snap_compare(app, terminal_size=WIDE, run_before=settle)


def test_measure_in_progress(snap_compare: Any) -> None:
    """A run half way through its prefill: phase, bar, the device notice, how to cancel."""
    launcher = FakeLauncher(
        [MeasureNotice("device: rocm Radeon 8060S (gfx1151)"), MeasureProgress("prefill", 8, 16)]
    )
    app = build_app(fixed_deps(start_measurement=launcher), preset="gfx1151")

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("m")
        panel = app.explorer.query_one(MeasuredPanel)
        await wait_for(pilot, lambda: "prefill token 8/16" in panel.text, "the progress")
        await pilot.pause()

    assert snap_compare(app, terminal_size=WIDE, run_before=run_before)


def test_history_screen(snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three runs newest first, one ✗, and the warning for a torn line."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ".local" / "state"))
    write_history()
    app = build_app(fixed_deps(history=HistoryStore.default), preset="gfx1151")
    assert snap_compare(app, terminal_size=(140, 30), run_before=settle_then_history)


async def settle_then_history(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await pilot.press("H")
    await settle(pilot)
