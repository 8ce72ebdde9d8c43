"""vramscope's calibrated verdict in the explorer (issue #21, item 4): beside mlxcel's,
the same line `inspect --calibrated` prints, `v` switching which verdict the colour and
the summary are held against, and `R` after `m` recalibrating from the history."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.backend import Backend
from core.calibration.builtin import DATA_FILE, builtin_calibration, peak_bound
from core.calibration.select import choose, default_candidates
from core.catalog.resolve import resolve_entry
from core.device.reading import read_card
from core.device_memory import DeviceMemory
from core.estimate.available import AvailableMemory
from core.measurement.engine import Engine
from core.measurement.history import HistoryStore
from core.measurement.result import MeasuredPeak
from tests.tui.helpers import (
    LLAMA,
    NO_GPU,
    ROCM_MACHINE,
    breakdown_text,
    build_app,
    fixed_deps,
    settle,
    settle_then,
    wait_for,
)
from tui.app import VramscopeApp
from tui.cli import main
from tui.model.measure_state import PanelKind
from tui.widgets.measured_panel import MeasuredPanel
from tui.widgets.status_line import SummaryLine

CALIBRATED = "Calibrated (vramscope"
LOAD_CALIBRATED = "Load calibrated (vramscope"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def save_user_calibration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """mlxcel's 18 gfx1151 rows, each 50 MB higher, fitted by `vramscope calibrate` for any
    ROCm device (no device column), so it applies where no device is named."""
    lines = ["model,context,inflight_mib,backend,peak_bytes,engine"]
    for line in DATA_FILE.read_text().splitlines()[1:]:
        if line.startswith("#") or line.startswith("model,"):
            continue
        model, ctx, mib, centi = line.split(",")
        peak = peak_bound(int(centi)) + 50_000_000
        lines.append(f"{model},{ctx},{mib},rocm,{peak},mlx")
    rows = tmp_path / "runs.csv"
    rows.write_text("\n".join(lines) + "\n")
    assert "Saved 1 calibration(s)" in cli(capsys, "calibrate", "--rows", str(rows))


def calibrated_on_screen(app: VramscopeApp) -> tuple[str, str]:
    """(the calibrated verdict's badge, its line with the wrapping undone)."""
    lines = breakdown_text(app).splitlines()
    start = next(i for i, ln in enumerate(lines) if CALIBRATED in ln)
    end = next(
        i
        for i, ln in enumerate(lines)
        if ln.startswith("Verdict held against") or LOAD_CALIBRATED in ln
    )
    badge, _, first = lines[start].partition(CALIBRATED)
    text = " ".join([CALIBRATED + first, *(ln.strip() for ln in lines[start + 1 : end])])
    return badge.strip(), " ".join(text.split())


def load_calibrated_on_screen(app: VramscopeApp) -> str:
    """The calibrated load's line under the calibrated verdict, wrapping undone."""
    lines = breakdown_text(app).splitlines()
    start = next(i for i, ln in enumerate(lines) if LOAD_CALIBRATED in ln)
    end = next(i for i, ln in enumerate(lines) if ln.startswith("Verdict held against"))
    return " ".join(" ".join(ln.strip() for ln in lines[start:end]).split())


def summary(app: VramscopeApp) -> str:
    return app.explorer.query_one(SummaryLine).text


async def test_the_calibrated_verdict_is_inspect_s_and_v_holds_the_verdict_against_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_user_calibration(tmp_path, capsys)
    # The calibration is gfx1151's: the question names that device (on the command line;
    # on screen, the card this ROCm machine reads).
    workload = ["--backend", "rocm", "--max-tokens", "8192", "--inflight-mb", "1024"]
    workload += ["--calibration-device", "gfx1151"]
    doc = json.loads(cli(capsys, "inspect", LLAMA, *workload, "--json", "--calibrated"))
    mlxcel, calibrated = doc["total_bytes"], doc["calibrated"]["total_bytes"]
    assert doc["calibrated"]["origin"] == "user"
    assert doc["calibrated"]["device"] is None
    assert mlxcel != calibrated
    room = (mlxcel + calibrated) // 2  # one verdict fits, the other does not
    shown = cli(capsys, "inspect", LLAMA, *workload, "--memory-limit", str(room), "--calibrated")
    (line,) = [ln.strip() for ln in shown.splitlines() if CALIBRATED in ln]
    (load_line,) = [ln.strip() for ln in shown.splitlines() if LOAD_CALIBRATED in ln]

    card = DeviceMemory("card1 (AMD Radeon 8060S, gfx1151)", 96 << 30, 0, "test", 0.8)
    deps = fixed_deps(
        ROCM_MACHINE,
        AvailableMemory(room, "test"),
        calibrations=default_candidates,
        read_device=lambda backend: replace(card, target="gfx1151"),
    )
    app = build_app(deps, model=LLAMA, max_tokens=8192)
    async with app.run_test(size=(120, 48)) as pilot:
        await settle(pilot)
        assert app.explorer.available is not None and app.explorer.available.bytes == room
        badge, text = calibrated_on_screen(app)
        assert text == " ".join(line.split())  # inspect's line, to the character
        # and the load calibrated by the same calibration, inspect's line under it
        assert load_calibrated_on_screen(app) == " ".join(load_line.split())
        assert "your calibration of" in text and "fitted to MLX's peak" in text
        cal_fits = calibrated <= room
        assert badge == ("FITS" if cal_fits else "DOES NOT FIT")
        mlxcel_words = "FITS" if not cal_fits else "DOES NOT FIT"
        assert summary(app).startswith(f" {mlxcel_words} ")  # mlxcel's by default
        assert "Verdict held against mlxcel's estimate" in breakdown_text(app)

        await pilot.press("v")
        await settle(pilot)
        assert app.explorer.state.calibrated_verdict
        assert summary(app).startswith(f" {badge} (calibrated) ")
        assert "vramscope calibrated" in summary(app) or "calibrated" in summary(app)
        assert "Verdict held against vramscope's calibrated total" in breakdown_text(app)
        assert calibrated_on_screen(app) == (badge, text)  # the figure itself never moves

        await pilot.press("v")
        await settle(pilot)
        assert summary(app).startswith(f" {mlxcel_words} ")


async def test_no_calibration_for_the_backend_shows_mlxcel_s_verdict_alone() -> None:
    deps = fixed_deps(calibrations=lambda: ((builtin_calibration(),), ()))
    app = build_app(deps, model=LLAMA, backend=Backend.CPU)
    async with app.run_test(size=(120, 48)) as pilot:
        await settle(pilot)
        assert CALIBRATED not in breakdown_text(app)
        await pilot.press("v")  # nothing to hold it against: mlxcel's stays
        await settle(pilot)
        assert "(calibrated)" not in summary(app)


async def test_a_preset_of_another_card_is_not_calibrated_by_the_gfx1151_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The built-in calibration was fitted on gfx1151: a 24 GiB RX 7900 XTX (gfx1100)
    preset gets mlxcel's verdict alone, and `inspect` says no calibration applies."""
    out = cli(capsys, "inspect", LLAMA, "--preset", "rx7900xtx", "--calibration", "builtin")
    assert "no calibration for rocm gfx1100" in out
    doc = json.loads(
        cli(capsys, "inspect", LLAMA, "--preset", "rx7900xtx", "--calibrated", "--json")
    )
    assert doc["calibrated"] is None
    for preset, calibrated in (("rx7900xtx", False), ("gfx1151", True)):
        deps = fixed_deps(calibrations=lambda: ((builtin_calibration(),), ()))
        app = build_app(deps, model=LLAMA, preset=preset)
        async with app.run_test(size=(120, 48)) as pilot:
            await settle(pilot)
            assert (CALIBRATED in breakdown_text(app)) is calibrated, preset


class TestSnapshot:
    def test_calibrated_verdict_held_against(self, snap_compare: Any) -> None:
        """mlxcel's verdict muted, the built-in calibration's coloured (after `v`)."""
        deps = fixed_deps(calibrations=lambda: ((builtin_calibration(),), ()))
        app = build_app(deps, preset="gfx1151")
        assert snap_compare(app, terminal_size=(120, 44), run_before=settle_then("v"))


def recorded_peak(app: VramscopeApp) -> MeasuredPeak:
    peak = app.explorer.query_one(MeasuredPanel).peak
    assert peak is not None
    return peak


async def test_r_after_m_recalibrates_from_the_history_with_the_new_run(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deps = fixed_deps(
        NO_GPU,  # a CPU machine, as this one: its reading names the CPU
        resolve_entry=lambda name: resolve_entry(name),
        history=HistoryStore.default,
        calibrations=default_candidates,
        read_device=read_card,  # this CPU, named: its runs' calibration is for it
    )
    app = build_app(deps, model=str(tiny_model), backend=Backend.CPU, max_tokens=32)
    told: list[str] = []
    real_notify = app.notify

    def notify(message: str, **kw: Any) -> None:
        told.append(f"{kw.get('title', '')}: {message}")
        real_notify(message, **kw)

    monkeypatch.setattr(app, "notify", notify)
    async with app.run_test(size=(120, 48)) as pilot:
        await settle(pilot)
        assert CALIBRATED not in breakdown_text(app)  # nothing calibrates the CPU yet
        await pilot.press("m")
        await wait_for(
            pilot,
            lambda: app.explorer.query_one(MeasuredPanel).kind is not PanelKind.RUNNING,
            "the child",
        )
        peak = recorded_peak(app)
        assert any("R: recalibrate" in t for t in told), told
        await pilot.press("R")
        await settle(pilot)
        (refusal,) = [t for t in told if t.startswith("Not recalibrated")]
        assert "needs runs of at least 2 models, got 1" in refusal
        assert CALIBRATED not in breakdown_text(app)

        # Two more models' runs on the same engine and device, as other `m`s would add.
        store = HistoryStore.default()
        for name, extra in (("google/gemma-2-2b-it", 1), ("Qwen/Qwen2.5-7B-Instruct", 2)):
            store.append(
                MeasuredPeak.from_dict(
                    {**peak.to_dict(), "model": name, "peak_bytes": peak.peak_bytes * extra}
                )
            )
        await pilot.press("R")
        await settle(pilot)
        (done,) = [t for t in told if t.startswith("Recalibrated (vramscope)")]
        device = peak.arch or peak.device_name
        # The torch engine emulated MLX-ROCm's queue on the CPU, so its runs are held
        # against ROCm's formula, as `table` holds them, and the fit says so.
        assert peak.emulated_queue
        assert f"torch on cpu {device}, held against ROCm's formula: 3 runs of 3 models" in done
        # It calibrates ROCm estimates on that CPU, named: never this CPU estimate.
        assert CALIBRATED not in breakdown_text(app)
        cals, _ = default_candidates()
        mine = choose(cals, Backend.ROCM, Engine.TORCH, device).calibration
        assert mine is not None and mine.runs == 3 and mine.device_kind is Backend.CPU
        assert choose(cals, Backend.CPU, Engine.TORCH, device).calibration is None
    # the load calibrated beside it, its dimensions read as `calibrate` reads them (out
    # of the app, whose test run holds stdout)
    assert mine.load is not None
    doc = json.loads(cli(capsys, "calibrate", "--engine", "torch", "--json"))
    assert [c["load"] for c in doc["calibrations"]] == [mine.to_dict()["load"]]
