"""The explorer's Fits view (`f`): `vramscope fit`'s table for the settings on screen.

Every test drives the real app through Pilot over the built-in profiles and compares
what is painted with the real `vramscope fit` / `vramscope inspect` commands.
"""

from __future__ import annotations

import json
import re
import shlex
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from core.answer.fit import FitModel
from core.answer.quantization import Quantization
from core.catalog.entry import Catalog, CatalogEntry
from tests.tui.helpers import (
    breakdown_bytes,
    breakdown_text,
    build_app,
    fixed_deps,
    footer_line,
    settle,
    type_keys,
    wait_for,
    widget_lines,
)
from tui.app import VramscopeApp
from tui.cli import main
from tui.deps import _fit_models
from tui.screens.fits_screen import FitsScreen
from tui.widgets.command_lines_view import CommandLinesView
from tui.widgets.fit_table_view import FitTableView

QWEN = "Qwen/Qwen2.5-7B-Instruct"


async def open_fits(pilot: Pilot[Any]) -> FitsScreen:
    """Settle the explorer, press f, wait for the last row."""
    await settle(pilot)
    await pilot.press("f")
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, FitsScreen) and app.screen.done, "rows")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, FitsScreen)
    return screen


def painted_rows(screen: FitsScreen) -> list[tuple[str, ...]]:
    """The table's rows, top to bottom; those in view are checked against their painted
    lines, column by column shown (at 160 columns every column but FROM is in view)."""
    table = screen.query_one(FitTableView)
    lines = [line for line in widget_lines(table)[1:] if line.strip()]  # 0: the header
    shown = [c.index for c in table.shown]
    painted = [tuple(re.split(r"\s{2,}", line.strip())) for line in lines]
    assert painted == [tuple(row[i] for i in shown) for row in table.rows[: len(lines)]]
    return list(table.rows)


def fit_command_rows(capsys: pytest.CaptureFixture[str], command: str) -> list[tuple[str, ...]]:
    """The table rows `vramscope fit ...` prints (cells split at two spaces or more)."""
    words = shlex.split(command)
    assert words[:2] == ["vramscope", "fit"]
    assert main(words[1:]) == 0
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("MODEL "))
    rows = []
    for line in out[start + 1 :]:
        if not line.strip():
            break
        rows.append(tuple(re.split(r"\s{2,}", line.strip())))
    return rows


def inspect_json(capsys: pytest.CaptureFixture[str], command: str) -> dict[str, Any]:
    words = shlex.split(command)
    assert words[:2] == ["vramscope", "inspect"]
    assert main([*words[1:], "--json"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


async def test_f_shows_the_rows_and_order_of_the_fit_command_it_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = build_app(preset="rx7900xtx", max_tokens=16384)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_fits(pilot)
        shown = painted_rows(screen)
        command = screen.inputs.command
    assert "--max-tokens 16384" in command
    expected = fit_command_rows(capsys, command)
    assert len(shown) == len(expected) > 20
    assert shown == expected
    assert any(row[5] == "DOES NOT FIT" for row in shown)  # a 24 GiB card: not everything fits


async def test_the_filter_narrows_to_rows_holding_every_word() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_fits(pilot)
        everything = painted_rows(screen)
        await pilot.press("slash")
        await type_keys(pilot, "gemma 4bit")
        narrowed = painted_rows(screen)
        assert screen.query_one("#fits-filter", Input).value == "gemma 4bit"
    assert 0 < len(narrowed) < len(everything)
    assert all("gemma" in r[0].lower() and "4bit" in (r[0] + r[1]).lower() for r in narrowed)
    # The order is kept: the narrowed rows are the full table's, in the same order.
    assert narrowed == [r for r in everything if r in narrowed]


def sizes(rows: list[tuple[str, ...]], column: int) -> list[float]:
    """A size column in GiB (negative slack stays negative)."""
    units = {"GiB": 1.0, "MiB": 1 / 1024, "KiB": 1 / 1024**2, "B": 1 / 1024**3}
    out = []
    for row in rows:
        number, unit = row[column].split()
        out.append(float(number) * units[unit])
    return out


async def test_s_and_a_header_click_sort_by_a_column() -> None:
    app = build_app(preset="rx7900xtx")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_fits(pilot)
        ranked = painted_rows(screen)
        await pilot.press("s", "s", "s", "s")  # ranking -> MODEL -> QUANT -> WEIGHTS -> TOTAL
        by_total = painted_rows(screen)
        await pilot.press("S")
        reversed_total = painted_rows(screen)
        # A click on the SLACK header, where it is painted (▲ marks the sorted column).
        table = screen.query_one(FitTableView)
        await pilot.click(FitTableView, offset=(widget_lines(table)[0].index("SLACK"), 0))
        await pilot.pause()
        by_slack = painted_rows(screen)
        header = re.split(r"\s{2,}", widget_lines(table)[0].strip())
    totals = sizes(by_total, 3)
    assert totals == sorted(totals) and by_total != ranked
    assert sizes(reversed_total, 3) == sorted(totals, reverse=True)
    slack = sizes(by_slack, 7)  # the overflow of a row that does not fit is negative
    assert slack == sorted(slack)
    assert header[7] == "SLACK ▲"
    assert sorted(by_slack) == sorted(ranked)  # the same rows, in another order


async def test_enter_opens_the_stored_row_with_inspect_s_total(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_fits(pilot)
        await pilot.press("slash")
        await type_keys(pilot, "meta-llama/llama-3.1-8b-instruct stored\r")
        (row,) = painted_rows(screen)
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, FitsScreen)
        state = app.explorer.state
        shown = breakdown_bytes(app)
        command = app.explorer.query_one("#commands", CommandLinesView).vramscope
    assert state.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert state.quantize_as is Quantization.STORED
    report = inspect_json(capsys, command)
    assert shown["Total estimate"] == report["total_bytes"]
    assert shown["Weights"] == report["weights_bytes"]
    assert row[0] == "meta-llama/Llama-3.1-8B-Instruct" and row[1] == "stored"


async def test_enter_on_a_what_if_row_opens_it_quantized_as_the_fit_row_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_fits(pilot)
        await pilot.press("slash")
        await type_keys(pilot, f"{QWEN} mlx-4bit\r")
        assert len(painted_rows(screen)) == 1
        await pilot.press("enter")
        await settle(pilot)
        state = app.explorer.state
        shown = breakdown_bytes(app)
        text = breakdown_text(app)
        command = app.explorer.query_one("#commands", CommandLinesView).vramscope
    assert (state.model, state.quantize_as) == (QWEN, Quantization.MLX_4BIT)
    assert command.startswith("vramscope fit --quantizations mlx-4bit")
    assert main([*shlex.split(command)[1:], "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    (fit_row,) = [r for r in rows if r["model"] == QWEN]
    assert shown["Weights"] == fit_row["weights_bytes"] == 4_284_263_424
    assert shown["Total estimate"] == fit_row["total_bytes"]
    flat = " ".join(text.split())  # the note wraps beside the load's column
    assert "vramscope what-if mlx-4bit" in flat and "not mlxcel's" in flat


async def test_esc_closes_the_view_with_nothing_changed() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_fits(pilot)
        before = app.explorer.state
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, FitsScreen)
        assert app.explorer.state == before


async def test_rows_appear_while_the_rest_are_still_being_computed() -> None:
    """The walk is held after the first model: its rows are on screen, the filter answers,
    and the last rows come when the walk goes on."""
    gate = threading.Event()

    def held(catalog: Catalog) -> Iterator[tuple[CatalogEntry, FitModel | str]]:
        for i, item in enumerate(_fit_models(catalog, use_cache=False)):
            if i == 1:
                gate.wait(60)
            yield item

    app: VramscopeApp = build_app(fixed_deps(fit_models=held), preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, FitsScreen) and bool(app.screen.shown),
            "first rows",
        )
        screen = app.screen
        assert isinstance(screen, FitsScreen)
        first = painted_rows(screen)
        assert not screen.done and 0 < len(first) <= 3
        await pilot.press("slash")
        await type_keys(pilot, "zzz")
        assert painted_rows(screen) == []  # the UI answers while the worker waits
        await type_keys(pilot, "\x7f\x7f\x7f")
        gate.set()
        await wait_for(pilot, lambda: screen.done, "the last rows")
        await pilot.pause()
        assert len(painted_rows(screen)) > 20


@pytest.mark.parametrize(
    ("size", "columns"),
    [
        ((80, 24), ("MODEL", "QUANT", "LOAD", "VERDICT", "MAX CONTEXT")),
        ((120, 40), ("MODEL", "QUANT", "LOAD", "VERDICT", "MLXCEL", "MAX CONTEXT")),
    ],
)
async def test_a_smaller_terminal_shows_the_answer_columns_whole_and_every_footer_key(
    size: tuple[int, int], columns: tuple[str, ...]
) -> None:
    """At 80x24 the view showed MODEL, QUANT, WEIGHTS and a cut `72.`, and the footer ended
    `? Hel`; at 120x40 MAX CONTEXT was cut to `MAX C`."""
    app = build_app(preset="rx7900xtx")
    async with app.run_test(size=size) as pilot:
        screen = await open_fits(pilot)
        table = screen.query_one(FitTableView)
        lines = widget_lines(table)
        assert re.split(r"\s{2,}", lines[0].strip()) == list(columns)
        index = {name: table.columns.index(name) for name in columns}
        for line, row in zip(lines[1:], table.rows, strict=False):
            cells = re.split(r"\s{2,}", line.strip())
            for name in ("QUANT", "LOAD", "VERDICT", "MAX CONTEXT"):  # the answer, whole
                assert cells[columns.index(name)] == row[index[name]]
            model = cells[0]  # whole, or its start and an ellipsis
            assert model == row[0] or (model.endswith("…") and row[0].startswith(model[:-1]))
        footer = footer_line(app)
        assert footer.rstrip().endswith("^p palette")
        for key in ("esc Back", "/ Filter", "s Sort", "S Reverse", "q Quit", "? Help"):
            assert key in footer


async def test_at_80x24_the_table_takes_every_line_the_heading_and_status_leave(
    tmp_path: Any,
) -> None:
    """At 80x24 a catalog with a skipped folder (a long path) left the table 2 to 4 rows:
    the status wrapped over it (#41). The heading keeps to four lines, the status to
    five, and the table shows every row the rest of the screen holds."""
    from core.catalog.entry import SkippedModel
    from core.catalog.resolve import build_catalog

    deep = tmp_path / ("a-rather-long-folder-name-" * 4) / "models" / "broken-model"
    skipped = tuple(
        SkippedModel(str(deep / str(n)), "config.json is not JSON (line 1, column 1)")
        for n in range(6)
    )
    built = build_catalog([], include_hf_cache=False, env={})
    catalog = Catalog(built.entries, skipped)
    app = build_app(fixed_deps(build_catalog=lambda: catalog), preset="rx7900xtx")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_fits(pilot)
        table = screen.query_one(FitTableView)
        rows = [line for line in widget_lines(table)[1:] if line.strip()]
        # 24 lines: the footer, the box's two borders, four of heading, the filter and
        # its margin, at most five of status, the table's header: 9 rows.
        assert len(rows) >= 9, widget_lines(table)
        status = widget_lines(screen.query_one("#fits-status"))
        assert len(status) <= 5 and "6 skipped" in " ".join(status)
