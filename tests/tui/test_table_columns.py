"""Which columns a width holds (`tui.render.table_columns`): pure, no app."""

from __future__ import annotations

from tui.render.fit_table import FIT_COLUMNS
from tui.render.table_columns import TableColumn, cut, fit_columns

NAMES = tuple(c.name for c in FIT_COLUMNS)
# The Fits view's natural widths over the built-in profiles (a 45-column model name).
NATURAL = (45, 9, 10, 10, 12, 11, 14, 16)


def shown(room: int) -> dict[str, int]:
    return {NAMES[c.index]: c.width for c in fit_columns(FIT_COLUMNS, NATURAL, room, 2)}


def test_a_wide_table_shows_every_column_whole() -> None:
    assert shown(160) == dict(zip(NAMES, NATURAL, strict=True))


def test_the_other_columns_go_first_then_model_names_are_cut() -> None:
    # 115 columns (a 120-column terminal): FROM and WEIGHTS go, the names stay whole.
    assert list(shown(115)) == ["MODEL", "QUANT", "TOTAL", "VERDICT", "SLACK", "MAX CONTEXT"]
    assert shown(115)["MODEL"] == 45
    # 74 columns (80): only the answer, the model names cut to what is left.
    narrow = shown(74)
    assert list(narrow) == ["MODEL", "QUANT", "TOTAL", "VERDICT", "MAX CONTEXT"]
    assert narrow["MODEL"] == 74 - (9 + 10 + 12 + 14) - 2 * 4
    assert sum(narrow.values()) + 2 * 4 == 74


def test_the_essential_columns_go_least_important_first_and_one_always_stays() -> None:
    assert list(shown(50)) == ["MODEL", "QUANT", "TOTAL"]
    assert list(shown(5)) == ["MODEL"]


def test_a_new_column_slots_in_by_its_priority() -> None:
    columns = (*FIT_COLUMNS, TableColumn("LIKES", 5, right=True))
    natural = (*NATURAL, 6)
    got = [columns[c.index].name for c in fit_columns(columns, natural, 123, 2)]
    assert got == ["MODEL", "QUANT", "TOTAL", "VERDICT", "SLACK", "MAX CONTEXT", "LIKES"]


def test_cut_ends_with_an_ellipsis_only_where_it_cut() -> None:
    assert cut("meta-llama/Llama-3.1-8B", 10) == "meta-llam…"
    assert cut("Qwen", 10) == "Qwen"
    assert cut("Qwen", 0) == ""
