"""vramscope's load beside mlxcel's estimate in the explorer (#38): a second column in
the breakdown, term by term, and both verdicts where they disagree. gemma-3-4b-it at
32,768 tokens on a 24 GiB card is the case: mlxcel counts its 29 sliding-window layers
at full length (10.62 GiB of KV, DOES NOT FIT); mlx-lm holds them at 1,024 tokens."""

from __future__ import annotations

import json
import re

import pytest

from core.units import format_bytes_short
from tests.tui.helpers import breakdown_bytes, breakdown_text, build_app, settle, wait_for
from tui.cli import main
from tui.widgets.breakdown import Breakdown
from tui.widgets.status_line import SummaryLine

GEMMA = "google/gemma-3-4b-it"
QUESTION = {"preset": "rx7900xtx", "model": GEMMA, "max_tokens": 32768}


def fit_row(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    argv = ["fit", "--json", "--preset", "rx7900xtx", "--max-tokens", "32768"]
    assert main([*argv, "--quantizations", "stored"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    found: dict[str, object] = next(r for r in rows if r["model"] == GEMMA)
    return found


def cells(text: str, label: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(label))
    return re.split(r"\s{2,}", line.strip())


async def test_the_breakdown_shows_the_load_beside_mlxcels_terms_and_both_verdicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    row = fit_row(capsys)
    load = row["load"]
    assert isinstance(load, dict)
    app = build_app(**QUESTION)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: "mlx-lm load" in breakdown_text(app), "the load")
        text = breakdown_text(app)
        mlxcel = breakdown_bytes(app)
        summary = app.explorer.query_one(SummaryLine).text
    header = re.split(r"\s{2,}", text.splitlines()[0].strip())
    assert header[:4] == ["Term", "mlxcel", "Bytes", "mlx-lm load"]
    # mlxcel's figures, untouched, and the load's beside them, term by term.
    assert mlxcel["KV cache"] == 11_408_506_880 and mlxcel["Total estimate"] == row["total_bytes"]
    kv = cells(text, "KV cache")
    assert kv[1:4] == ["10.62 GiB", "11,408,506,880", format_bytes_short(load["kv_bytes"])]
    assert cells(text, "Weights")[3] == format_bytes_short(load["weights_bytes"])
    assert cells(text, "Allocator ovhd")[3] == "—"  # no counterpart in the load
    assert cells(text, "Total estimate")[3] == format_bytes_short(load["total_bytes"])
    assert "mlx-lm: 5 of 34 layers" in text  # the load's own words under mlxcel's note
    # Both verdicts, mlxcel's marked as its, the load's with why they differ.
    flat = " ".join(text.split())
    assert "DOES NOT FIT mlxcel: 4.19 GiB (4,494,512,192 bytes) over" in flat
    free = format_bytes_short(load["margin_bytes"])
    assert f"FITS mlx-lm load: {free} ({load['margin_bytes']:,} bytes) free" in flat
    assert "mlxcel's preflight would refuse this; mlx-lm loads it" in flat
    # The largest context by the load, mlxcel's beside it.
    tokens = load["largest_context"]["tokens"]
    assert f"{tokens:,} tokens" in flat and "by mlxcel's estimate: 21,760 tokens" in flat
    # The summary keeps mlxcel's badge and says the load fits, in the one verdict's words.
    assert summary.strip().startswith("DOES NOT FIT")
    assert f"mlx-lm load {format_bytes_short(load['total_bytes'])} FITS" in summary


async def test_the_same_question_words_the_same_verdicts_in_inspect_fit_and_the_explorer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """mlxcel's verdict and the load's, each worded once (`core.answer.verdict`): inspect's
    banner and load line, fit's MLXCEL and VERDICT cells, the explorer's summary (#39)."""
    flags = ["--preset", "rx7900xtx", "--max-tokens", "32768"]
    assert main(["inspect", GEMMA, *flags]) == 0
    out = capsys.readouterr().out
    banner = next(x.strip() for x in out.splitlines() if "FIT" in x).split(":")[0]
    load_line = next(x for x in out.splitlines() if x.startswith("vramscope: load (mlx-lm):"))
    by_load = load_line.rsplit(": ", 1)[1]
    assert main(["fit", *flags, "--quantizations", "stored"]) == 0
    table = capsys.readouterr().out.splitlines()
    head = re.split(r"\s{2,}", next(x for x in table if x.startswith("MODEL")).strip())
    row = re.split(r"\s{2,}", next(x for x in table if x.startswith(GEMMA)).strip())
    fit_cells = dict(zip(head, row, strict=True))
    app = build_app(**QUESTION)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: "mlx-lm load" in breakdown_text(app), "the load")
        summary = app.explorer.query_one(SummaryLine).text
    said = summary.split("mlx-lm load", 1)[1].split("·")[0].split()[-2:]
    # mlxcel's: DOES NOT FIT everywhere; the load's: FITS everywhere.
    assert banner == fit_cells["MLXCEL"] == "DOES NOT FIT"
    assert summary.strip().startswith(banner)
    assert by_load == fit_cells["VERDICT"] == "FITS" == said[-1]


@pytest.mark.parametrize(
    ("size", "exact_bytes"),
    [((120, 40), True), ((80, 24), True), ((60, 20), False)],
)
async def test_narrow_screens_keep_the_load_column_and_give_up_the_bar_first(
    size: tuple[int, int], exact_bytes: bool
) -> None:
    app = build_app(**QUESTION)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        breakdown = app.screen.query_one(Breakdown)
        await wait_for(pilot, lambda: breakdown.view is not None, "the estimate")
        view = breakdown.view
        assert view is not None and view.load is not None
        lines = breakdown_text(app).splitlines()
    kv = re.split(r"\s{2,}", next(x for x in lines if x.startswith("KV cache")))
    load_kv = format_bytes_short(view.load.load.kv_bytes)
    # The bar gives way first, then (at 60 columns) mlxcel's exact bytes; the load stays.
    if exact_bytes:
        assert kv[1:4] == ["10.62 GiB", "11,408,506,880", load_kv]
    else:
        assert kv[1:3] == ["10.62 GiB", load_kv]
    assert not any(c in kv[-1] for c in "▏▎▍▌▋▊▉█")  # no bar beside a cut note
    assert any(x.startswith(" FITS ") for x in lines)  # the load's badge under mlxcel's
