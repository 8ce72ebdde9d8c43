"""The table of `fit --hub` and of the Fits view's Hub scope: fit's columns, then the
trained context, downloads, likes and the last update; bound rows marked `≈`."""

from __future__ import annotations

from collections.abc import Sequence

from core.answer.fit import rank_key
from core.answer.verdict import BOUND_MARK, verdict_words
from core.display_text import clean_text
from core.fit.hub import HubFitRow
from core.units import format_bytes_short
from tui.render.fit_table import COLUMNS, FIT_COLUMNS, column_key, table_row
from tui.render.table_columns import TableColumn

HUB_EXTRA = ("TRAINED", "DOWNLOADS", "LIKES", "UPDATED")
HUB_COLUMNS = (*COLUMNS[:-1], *HUB_EXTRA, COLUMNS[-1])
"""fit's columns with the listing's before FROM (which stays last)."""
HUB_RIGHT = frozenset({"WEIGHTS", "TOTAL", "LOAD", "SLACK", "MAX CONTEXT", *HUB_EXTRA})
HUB_SORTS = ("RANK", *HUB_COLUMNS)
HUB_TABLE_COLUMNS = (
    *FIT_COLUMNS[:-1],
    # The listing's columns go before fit's own extras when the view narrows.
    TableColumn("TRAINED", 10, right=True),
    TableColumn("DOWNLOADS", 11, right=True),
    TableColumn("LIKES", 12, right=True),
    TableColumn("UPDATED", 13),
    FIT_COLUMNS[-1],
)
"""HUB_COLUMNS as the Fits view's Hub scope lays them out (`tui.render.table_columns`)."""


def _count(value: int | None) -> str:
    if value is None:
        return "?"
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return str(value)


def hub_cells(row: HubFitRow, available_bytes: int) -> tuple[str, ...]:
    """One line's cells: the exact row's fit cells, or the listing's bound."""
    listed = row.listed
    trained = row.trained_tokens
    extra = (
        f"{trained:,}" if trained else "?",
        _count(listed.downloads),
        _count(listed.likes),
        listed.updated or "?",
    )
    if row.exact and row.row is not None:
        cells = table_row(row.row)
        where = "Hub store" if row.from_store else "Hub"
        at = f" @ {listed.commit[:8]}" if listed.commit else ""
        return tuple(clean_text(c) for c in (*cells[:-1], *extra, where + at))
    weights = row.bound_weights_bytes
    bound = verdict_words(row.bound_verdict(available_bytes))
    gated = " gated" if listed.gated else ""
    cells = (
        listed.repo_id,
        row.quantization.word,
        f"{BOUND_MARK}{format_bytes_short(weights)}" if weights is not None else "?",
        f"≥{format_bytes_short(weights)}" if weights is not None else "?",
        "",  # LOAD: a listing gives no load
        bound or f"{BOUND_MARK} unread{gated}",
        "",
        "",
        "",
        *extra,
        row.problem or "listing (weights bound only)",
    )
    return tuple(clean_text(c) for c in cells)


def hub_rank_key(row: HubFitRow) -> tuple[object, ...]:
    """fit's ranking for exact rows; bound rows after them, larger first."""
    if row.exact and row.row is not None:
        return (0, *rank_key(row.row))
    return (1, -(row.bound_weights_bytes or 0), row.listed.repo_id.casefold())


def hub_column_key(column: str, row: HubFitRow) -> tuple[object, ...]:
    """Ascending sort key of one column; ties in the ranking's order."""
    listed = row.listed
    value: object
    if column == "TRAINED":
        value = row.trained_tokens or 0
    elif column == "DOWNLOADS":
        value = listed.downloads or 0
    elif column == "LIKES":
        value = listed.likes or 0
    elif column == "UPDATED":
        value = listed.updated or ""
    elif row.exact and row.row is not None:
        value = column_key(column, row.row)[0]
    elif column == "MODEL":
        value = listed.repo_id.casefold()
    elif column in ("WEIGHTS", "TOTAL"):
        value = row.bound_weights_bytes or 0
    else:
        value = 0
    return (value, hub_rank_key(row))


def hub_sorted(rows: Sequence[HubFitRow], column: str, descending: bool) -> list[HubFitRow]:
    """Rows in a column's order (RANK: fit's ranking, bound rows after)."""
    if column == "RANK":
        ordered = sorted(rows, key=hub_rank_key)
        return ordered[::-1] if descending else ordered
    try:
        return sorted(rows, key=lambda r: hub_column_key(column, r), reverse=descending)
    except TypeError:  # values of two kinds in one column: rank instead
        return sorted(rows, key=hub_rank_key)


def hub_table(rows: Sequence[HubFitRow], available_bytes: int) -> list[str]:
    """The aligned table (the header, then a line per row)."""
    body = [hub_cells(r, available_bytes) for r in rows]
    if not body:
        return ["no rows"]
    table = [HUB_COLUMNS, *body]
    right = {i for i, c in enumerate(HUB_COLUMNS) if c in HUB_RIGHT}
    widths = [max(len(r[i]) for r in table) for i in range(len(HUB_COLUMNS))]
    lines = []
    for cells in table:
        padded = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells[:-1], widths, strict=False))
        ]
        lines.append(("  ".join(padded) + "  " + cells[-1]).rstrip())
    return lines
