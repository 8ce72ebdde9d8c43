"""One display boundary: a hostile folder name reaches no output surface raw.

The name carries an SGR colour, an OSC window-title sequence ended by BEL, and a
bidi override. Every surface that shows a model name is walked: the explorer's model
list, the history screen and its export, the `table` Markdown (stdout and --out
share it), the text beside a measured peak, and a rendered screenshot.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import DataTable

from core.catalog.resolve import build_catalog
from core.measurement.history import HistoryStore
from core.measurement.report import TableRow, comparison_lines, markdown_table
from tests.tui.helpers import build_app, fixed_deps, settle
from tests.tui.test_history_screen import RUNS
from tui.screens.history_screen import HistoryScreen
from tui.widgets.model_list import ModelList

HOSTILE = "esc\x1b[31mRED\x1b]0;pwn\x07\u202eevil"
RAW = ("\x1b", "\x07", "\u202e")


def clean(text: str) -> bool:
    return not any(ch in text for ch in RAW)


def hostile_folder(root: Path) -> Path:
    folder = root / HOSTILE
    folder.mkdir(parents=True)
    config = {
        "model_type": "llama",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "intermediate_size": 512,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1000,
    }
    (folder / "config.json").write_text(json.dumps(config))
    return folder


async def test_the_model_list_shows_the_name_without_its_escapes(tmp_path: Path) -> None:
    hostile_folder(tmp_path / "models")
    catalog = build_catalog([str(tmp_path / "models")], use_cache=False)
    assert any(HOSTILE in e.name for e in catalog.entries)
    app = build_app(fixed_deps(build_catalog=lambda: catalog), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        options = app.screen.query_one(ModelList).options
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        shown = [p for p in prompts if "RED" in p]
        assert shown, prompts
        assert all(clean(p) for p in shown)
        assert "esc[31mRED]0;pwnevil" in shown[0]


async def test_the_history_screen_and_its_export_show_the_name_without_its_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = HistoryStore.default()
    store.append(replace(RUNS[0], model=str(tmp_path / HOSTILE)))
    app = build_app(fixed_deps(history=HistoryStore.default), preset="gfx1151")
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
        table = app.screen.query_one(DataTable)
        cells = [str(c) for row in range(table.row_count) for c in table.get_row_at(row)]
        assert any("RED" in c for c in cells)
        assert all(clean(c) for c in cells)
        await pilot.press("e")
        await settle(pilot)
    exports = list(tmp_path.glob("*.md"))
    assert exports
    text = exports[0].read_text()
    assert "RED" in text and clean(text)


def test_the_table_markdown_and_the_peak_text_show_the_name_without_its_escapes() -> None:
    peak = replace(RUNS[0], model=f"/models/{HOSTILE}|x")
    row = TableRow(peak.model, 640, 1024, peak.estimate_bytes, peak)
    table = markdown_table([row], "Estimate against peak")
    assert "RED" in table and clean(table)
    assert "\\|x" in table  # a `|` in the name cannot open a column
    lines = "\n".join(comparison_lines(peak))
    assert "RED" in lines and clean(lines)


def test_a_screenshot_shows_the_name_without_its_escapes(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    folder = hostile_folder(tmp_path / "models")
    out = tmp_path / "shot.svg"
    proc = subprocess.run(
        [sys.executable, "-m", "tui", "screenshot", str(out), "--model", str(folder),
         "--models-dir", str(tmp_path / "models")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    svg = out.read_text()
    assert "RED" in svg and clean(svg)
    assert clean(proc.stdout) and clean(proc.stderr)
