"""Which columns a width holds (`tui.render.table_columns`): pure, no app."""

from __future__ import annotations

from tui.render.fit_table import FIT_COLUMNS
from tui.render.table_columns import TableColumn, cut, fit_columns

NAMES = tuple(c.name for c in FIT_COLUMNS)
# The Fits view's natural widths over the built-in profiles (a 45-column model name).
NATURAL = (45, 9, 10, 10, 10, 12, 12, 11, 14, 16)


def shown(room: int) -> dict[str, int]:
    return {NAMES[c.index]: c.width for c in fit_columns(FIT_COLUMNS, NATURAL, room, 2)}


def test_a_wide_table_shows_every_column_whole() -> None:
    assert shown(170) == dict(zip(NAMES, NATURAL, strict=True))
    assert list(shown(160)) == list(NAMES[:-1])  # FROM, the least important, goes first


def test_the_other_columns_go_first_then_model_names_are_cut() -> None:
    # 115 columns (a 120-column terminal): FROM, WEIGHTS, SLACK and mlxcel's TOTAL go,
    # the names stay whole; the load, both verdicts and the context stay.
    answer = ["MODEL", "QUANT", "LOAD", "VERDICT", "MLXCEL", "MAX CONTEXT"]
    assert list(shown(115)) == answer
    assert shown(115)["MODEL"] == 45
    # 74 columns (80): only the answer, mlxcel's verdict gone, the names cut to what is left.
    narrow = shown(74)
    assert list(narrow) == ["MODEL", "QUANT", "LOAD", "VERDICT", "MAX CONTEXT"]
    assert narrow["MODEL"] == 74 - (9 + 10 + 12 + 14) - 2 * 4
    assert sum(narrow.values()) + 2 * 4 == 74


def test_the_essential_columns_go_least_important_first_and_one_always_stays() -> None:
    assert list(shown(50)) == ["MODEL", "QUANT", "LOAD"]
    assert list(shown(5)) == ["MODEL"]


def test_a_new_column_slots_in_by_its_priority() -> None:
    # Above mlxcel's TOTAL (6), so TOTAL goes first and LIKES stays.
    columns = (*FIT_COLUMNS, TableColumn("LIKES", 5, right=True))
    natural = (*NATURAL, 6)
    got = [columns[c.index].name for c in fit_columns(columns, natural, 125, 2)]
    assert got == ["MODEL", "QUANT", "LOAD", "VERDICT", "MLXCEL", "MAX CONTEXT", "LIKES"]


def test_cut_ends_with_an_ellipsis_only_where_it_cut() -> None:
    assert cut("meta-llama/Llama-3.1-8B", 10) == "meta-llam…"
    assert cut("Qwen", 10) == "Qwen"
    assert cut("Qwen", 0) == ""
