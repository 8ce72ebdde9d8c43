"""`H`: the history screen lists past runs newest first, warns about damaged lines, exports.

Records are written through `core.measurement.history` into the temporary XDG_STATE_HOME
(tests/tui/conftest.py), so the screen reads a real history file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from core.measurement.history import HistoryStore
from core.measurement.report import TableRow, markdown_table
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure, UnmeasuredRun
from tests.tui.helpers import LLAMA, build_app, fixed_deps, settle, wait_for
from tui.render.history_table import EXPORT_FILE
from tui.screens.explorer_screen import ExplorerScreen
from tui.screens.history_screen import HistoryScreen


def run(hour: int, peak_bytes: int, estimate: int, budget: int = 1024) -> MeasuredPeak:
    return MeasuredPeak(
        model=LLAMA,
        device_kind="rocm",
        device_name="Radeon 8060S",
        peak_bytes=peak_bytes,
        peak_kind="torch allocator peak of live tensors (reset before the load)",
        inflight_mib=budget,
        prompt_tokens=512,
        gen_tokens=128,
        synthetic_weights=True,
        load_seconds=1.0,
        prefill_tokens_per_s=800.0,
        decode_tokens_per_s=40.0,
        torch_version="2.13.0",
        arch="gfx1151",
        estimate_bytes=estimate,
        timestamp=f"2025-06-01T{hour:02d}:00:00+00:00",
        reserved_peak_bytes=peak_bytes + (1 << 20),
    )


RUNS = (
    run(9, 6_000_000_000, 6_653_428_633),
    run(10, 6_900_000_000, 6_653_428_633),
    run(11, 5_200_000_000, 5_847_000_000, budget=256),
)


def write_history(damaged: bool = True) -> HistoryStore:
    """Three runs through core.measurement.history, with a torn line after the first."""
    store = HistoryStore.default()
    store.append(RUNS[0])
    if damaged:
        with store.path.open("ab") as fh:
            fh.write(b'{"schema":1,"kind":"measurement","result":{"mod')
    for peak in RUNS[1:]:
        store.append(peak)
    return store


async def open_history(pilot: Pilot[None]) -> HistoryScreen:
    """`H` from the explorer: the history screen, once it is up."""
    await settle(pilot)
    await pilot.press("H")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, HistoryScreen)
    return screen


async def test_the_history_lists_runs_newest_first_and_exports_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_history()
    app = build_app(fixed_deps(history=HistoryStore.default), preset="gfx1151")
    async with app.run_test(size=(140, 30)) as pilot:
        screen = await open_history(pilot)
        table = screen.query_one(DataTable)
        assert [table.get_row_at(i)[0] for i in range(table.row_count)] == [
            "2025-06-01 11:00",
            "2025-06-01 10:00",
            "2025-06-01 09:00",
        ]
        assert str(table.get_row_at(1)[-1]) == "✗ NO"
        warnings = screen.query_one("#history-warnings", Static)
        assert warnings.display
        assert ":2: skipped a damaged record" in str(warnings.render())

        await pilot.press("e")
        written = tmp_path / EXPORT_FILE
        assert screen.exported == written
        # The table `vramscope table` renders for these runs, in the order listed.
        rows = [
            TableRow(p.model, p.context_tokens, p.inflight_mib, p.estimate_bytes, p)
            for p in reversed(RUNS)
        ]
        expected = markdown_table(rows, "Estimate against peak", formulas=True)
        text = written.read_text(encoding="utf-8")
        assert text.startswith("## Estimate against peak\n")
        # Each row names its formula and KV mode (torch on ROCm: ROCm's formula).
        assert "| Model | Engine | Formula | KV | Context |" in text
        assert text.count("| torch engine | ROCm | fp16 | 640 |") == 3
        assert text.split("\n| Model")[1] == expected.split("\n| Model")[1]

        # A path that cannot be written is a message; the screen keeps working.
        box = screen.query_one("#export-path", Input)
        box.value = str(tmp_path)  # a folder
        box.focus()
        await pilot.press("enter")
        assert "Cannot write" in str(screen.query_one("#history-status", Static).render())

        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), "the explorer")


async def test_an_empty_or_unkept_history_says_so() -> None:
    app = build_app(fixed_deps(history=HistoryStore.default), preset="gfx1151")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        assert "No measurements yet" in str(app.screen.query_one("#history-empty").render())
        await pilot.press("e")
        status = str(app.screen.query_one("#history-status").render())
        assert "Nothing to export" in status


async def test_a_run_recorded_not_measured_is_listed_so_never_covered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vramscope run -- true` records "not measured" (#41): the screen lists it by its
    time among the peaks, with no peak and nothing covered, and leaves it out of the
    export (it has no peak to hold against an estimate)."""
    monkeypatch.chdir(tmp_path)
    store = write_history(damaged=False)
    failure = MeasurementFailure(FailureKind.NOT_MEASURED, "not measured: ...", 0)
    store.append(
        UnmeasuredRun("true", "true", 8192, 0, None, failure, "2025-06-01T10:30:00+00:00", "0")
    )
    app = build_app(fixed_deps(history=HistoryStore.default), preset="gfx1151")
    async with app.run_test(size=(140, 30)) as pilot:
        screen = await open_history(pilot)
        table = screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[0] for r in rows] == [
            "2025-06-01 11:00",
            "2025-06-01 10:30",
            "2025-06-01 10:00",
            "2025-06-01 09:00",
        ]
        assert rows[1][1] == "true" and rows[1][6:] == ["not measured", "-", "-", "-"]
        await pilot.press("e")
        assert (tmp_path / EXPORT_FILE).read_text(encoding="utf-8").count("| torch engine |") == 3
        assert "not measured" not in (tmp_path / EXPORT_FILE).read_text(encoding="utf-8")
