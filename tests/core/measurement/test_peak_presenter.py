"""One presenter each for a measured peak: its JSON (`peak_json`: `measure --json` and
every rank of a split) and its covered words (the CLI's comparison, the explorer's
panel and summary)."""

from __future__ import annotations

import json

from core.measurement.comparison import margin
from core.measurement.report import comparison_lines, covered_words, peak_json
from tests.factories import peak


def test_a_peak_s_json_is_one_shape_with_the_estimate_it_is_held_against() -> None:
    held = peak(estimate_bytes=6_000_000_000)
    doc = json.loads(json.dumps(peak_json(held, estimate_bytes=1)))
    assert list(doc) == [
        "engine",
        "counted",
        "estimate_bytes",
        "estimate_backend",
        "measured",
        "margin",
    ]
    assert doc["engine"] == "torch" and doc["estimate_bytes"] == 6_000_000_000
    assert doc["margin"] == {"bytes": 1_000_000_000, "percent": 20.0, "covered": True}
    assert doc["measured"] == held.to_dict() | {"engine": "torch", "device_kind": "cpu"}
    # A peak recorded without its estimate takes the caller's, and has no margin.
    bare = peak_json(peak(), estimate_bytes=7)
    assert (bare["estimate_bytes"], bare["margin"]) == (7, None)


def test_covered_reads_the_same_on_every_surface() -> None:
    over = peak(estimate_bytes=4_000_000_000)
    m = over.margin
    assert m is not None and not m.covered
    assert covered_words(m) == "NOT covered"
    assert covered_words(m, marked=True) == "✗ NOT covered"
    (line,) = [ln for ln in comparison_lines(over) if ln.startswith("Margin:")]
    assert line.endswith(", NOT covered")
    assert covered_words(margin(5, 5), marked=True) == "✓ covered"


def test_the_margin_s_short_words_carry_their_sign() -> None:
    from core.measurement.report import margin_short

    assert margin_short(margin(6 << 30, 5 << 30)) == "+1.00 GiB"
    assert margin_short(margin(5 << 30, 6 << 30)) == "-1.00 GiB"


def test_a_covered_column_reads_the_same_in_the_table_and_the_history() -> None:
    from core.measurement.report import covered_cell
    from tui.render.history_table import history_row

    over = peak(estimate_bytes=4_000_000_000)
    assert over.margin is not None
    assert covered_cell(over.margin.covered) == "NO"
    assert history_row(over).cells[-1] == covered_cell(False, marked=True) == "✗ NO"
    assert covered_cell(True, failed="exit status 1") == "no: failed, exit status 1"
