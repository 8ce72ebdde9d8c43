"""`m` in the explorer: a measurement's request, progress, result, failure and cancelling.

The first tests drive a fake launcher (tests/tui/fake_launcher.py) to reach
exact states; the rest press `m` on real models, so the real launcher starts a
real child process (torch on the CPU here) and the explorer shows what it says.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from core.backend import Backend
from core.catalog.resolve import resolve_entry
from core.measurement.engine import Engine
from core.measurement.history import HistoryStore
from core.measurement.protocol import MeasureNotice, MeasureProgress
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from tests.tui.fake_launcher import FakeLauncher
from tests.tui.helpers import LLAMA, breakdown_bytes, build_app, fixed_deps, settle, wait_for
from tui.app import VramscopeApp
from tui.model.measure_state import PanelKind
from tui.widgets.context_chart import ContextChart
from tui.widgets.measured_panel import MeasuredPanel
from tui.widgets.stop_slider import StopSlider


def panel(app: VramscopeApp) -> MeasuredPanel:
    return app.explorer.query_one(MeasuredPanel)


def llama_peak(peak_bytes: int, inflight_mib: int, prompt: int, gen: int) -> MeasuredPeak:
    return MeasuredPeak(
        model=LLAMA,
        device_kind="rocm",
        device_name="Radeon 8060S",
        peak_bytes=peak_bytes,
        peak_kind="torch allocator peak of live tensors (reset before the load)",
        inflight_mib=inflight_mib,
        prompt_tokens=prompt,
        gen_tokens=gen,
        synthetic_weights=True,
        load_seconds=2.5,
        prefill_tokens_per_s=900.0,
        decode_tokens_per_s=40.0,
        torch_version="2.13.0",
        arch="gfx1151",
    )


# --- a fake launcher: exact states ------------------------------------------------------


async def test_m_measures_the_model_on_screen_and_shows_progress_then_the_margin() -> None:
    launcher = FakeLauncher()
    app = build_app(fixed_deps(start_measurement=launcher), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("i", "left", "m")  # budget 1024 -> 768 MiB, then measure
        await wait_for(pilot, launcher.started.is_set, "the launcher to be called")
        request = launcher.handles[0].request
        # P + G is the context on screen (8192), G = 128; the slider's budget; the
        # built-in profile's id; the estimate knobs on screen.
        assert (request.model, request.prompt_tokens, request.gen_tokens) == (LLAMA, 8064, 128)
        assert (request.inflight, request.device) == (768, "auto")
        assert (request.headroom_factor, request.activation_mult) == (1.2, 2.0)
        assert panel(app).kind is PanelKind.RUNNING
        assert "starting" in panel(app).text

        handle = launcher.handles[0]
        handle.emit(MeasureNotice("device: rocm Radeon 8060S (gfx1151)"))
        handle.emit(MeasureProgress("prefill", 4, 16))
        await wait_for(pilot, lambda: "prefill token 4/16" in panel(app).text, "progress")
        assert "device: rocm Radeon 8060S" in panel(app).text
        assert panel(app).query_one("#measured-bar").percentage == 0.25

        handle.finish(llama_peak(5_000_000_000, 768, 8064, 128))
        await wait_for(pilot, lambda: panel(app).kind is PanelKind.RESULT, "the result")
        # The run's workload is what is on screen (ROCm, batch 1, fp16 KV, 8192 tokens,
        # 768 MiB), so the estimate beside the peak is the Total estimate row.
        total = breakdown_bytes(app)["Total estimate"]
        text = panel(app).text
        assert f"{total:,} bytes" in text
        assert f"{total - 5_000_000_000:+,} bytes" in text
        assert "✓ covered" in text
        assert "allocator peak · synthetic weights" in text
        assert "in-flight 768 MiB · rocm Radeon 8060S (gfx1151)" in text
        assert "prefill 900.0 tok/s · decode 40.0 tok/s" in text
        chart = app.explorer.query_one(ContextChart)
        assert chart.data is not None and chart.data.points == (
            (8192, 5_000_000_000, Engine.TORCH),
        )
        assert chart.border_subtitle == "◆ torch · measured peaks at 768 MiB: 1"


async def test_m_or_escape_cancels_and_late_words_are_ignored() -> None:
    launcher = FakeLauncher([MeasureProgress("load", 3, 30)])
    app = build_app(fixed_deps(start_measurement=launcher), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await wait_for(pilot, lambda: "loading tensors 3/30" in panel(app).text, "progress")
        await pilot.press("m")  # m again cancels
        assert launcher.handles[0].cancelled
        assert panel(app).kind is PanelKind.FAILURE
        assert "Measurement cancelled" in panel(app).text
        launcher.handles[0].emit(MeasureProgress("load", 4, 30))  # already done: dropped
        await pilot.pause()
        assert panel(app).kind is PanelKind.FAILURE

        await pilot.press("m")
        await wait_for(pilot, lambda: len(launcher.handles) == 2, "a second run")
        await pilot.press("escape")  # Esc cancels too
        assert launcher.handles[1].cancelled
        assert app.explorer.measure.state.run is None
        await pilot.press("escape")  # nothing in flight: back to the token slider
        assert isinstance(app.focused, StopSlider)


async def test_a_launcher_that_raises_is_a_failure_in_place() -> None:
    def broken(*_: Any) -> Any:
        raise RuntimeError("launcher bug")

    app = build_app(fixed_deps(start_measurement=broken), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await wait_for(pilot, lambda: panel(app).kind is PanelKind.FAILURE, "the failure")
        assert "internal error" in panel(app).text
        assert "RuntimeError: launcher bug" in panel(app).text
        await pilot.press("k")
        assert app.explorer.state.kv_int8


# --- the real launcher and a real child ------------------------------------------------


def folder_deps() -> Any:
    """The fixed world, plus model folders by path and the real history."""
    return fixed_deps(resolve_entry=lambda name: resolve_entry(name), history=HistoryStore.default)


async def test_a_real_tiny_model_is_measured_and_shown_beside_the_estimate(
    tiny_model: Path,
) -> None:
    app = build_app(folder_deps(), model=str(tiny_model), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("3", "2", "enter")  # 32 tokens: pp16 + tg16, a short run
        assert app.explorer.state.max_tokens == 32
        await pilot.press("m")
        await wait_for(
            pilot, lambda: panel(app).kind in (PanelKind.RESULT, PanelKind.FAILURE), "the child"
        )
        assert panel(app).kind is PanelKind.RESULT, panel(app).text
        peak = panel(app).peak
        assert peak is not None
        assert (peak.model, peak.prompt_tokens, peak.gen_tokens) == (str(tiny_model), 16, 16)
        assert (peak.device_kind, peak.inflight_mib) == (Backend.CPU, 1024)
        # The launcher's estimate, the explorer's and the Total estimate row agree.
        total = breakdown_bytes(app)["Total estimate"]
        assert peak.estimate_bytes == total
        assert f"{total - peak.peak_bytes:+,} bytes" in panel(app).text
        assert "RSS over baseline" in panel(app).text
        # The torch engine ran MLX's attention for the CPU, and says so.
        assert "in-flight 1024 MiB · MLX's unfused attention · cpu" in panel(app).text
        await settle(pilot)  # the history is read again after a result
        assert app.explorer.loader.history.results == [peak]


async def test_cancelling_a_real_run_kills_its_child(tiny_model: Path) -> None:
    app = build_app(folder_deps(), model=str(tiny_model), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("m")  # 8192 tokens: seconds of work left when Esc lands
        await wait_for(
            pilot,
            lambda: "loading" in panel(app).text or "prefill" in panel(app).text,
            "the child's first step",
        )
        run = app.explorer.measure.state.run
        assert run is not None and run.handle is not None
        handle, pid = run.handle, run.handle.pid
        assert pid is not None
        await pilot.press("escape")
        assert "Measurement cancelled" in panel(app).text
        outcome = await asyncio.to_thread(handle.wait, 60)
    assert isinstance(outcome, MeasurementFailure) and outcome.kind is FailureKind.CANCELLED
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_quitting_kills_a_running_child(tiny_model: Path) -> None:
    app = build_app(folder_deps(), model=str(tiny_model), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await wait_for(
            pilot,
            lambda: "loading" in panel(app).text or "prefill" in panel(app).text,
            "the child's first step",
        )
        run = app.explorer.measure.state.run
        assert run is not None and run.handle is not None
        handle, pid = run.handle, run.handle.pid
        await pilot.press("q")
    outcome = await asyncio.to_thread(handle.wait, 60)
    assert isinstance(outcome, MeasurementFailure) and outcome.kind is FailureKind.CANCELLED
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # type: ignore[arg-type]


async def test_an_unsupported_family_fails_in_place_and_the_app_keeps_working() -> None:
    app = build_app(model="google/gemma-2-2b-it", preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await wait_for(pilot, lambda: panel(app).kind is PanelKind.FAILURE, "the child's failure")
        text = panel(app).text
        assert "✗ Measurement failed: not supported for measurement" in text
        assert "gemma2" in text
        assert "Total estimate" in breakdown_bytes(app)  # the estimate is still there
        await pilot.press("k")
        assert app.explorer.state.kv_int8
        assert panel(app).kind is PanelKind.FAILURE
