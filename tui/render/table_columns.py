"""Which columns of a table a width holds: each column says how much it matters.

A narrow terminal showed a table's first columns and cut the rest mid-number (the Fits
view at 80 columns: MODEL, QUANT, WEIGHTS and `72.`). Here every column declares a
priority, whether it is part of the answer (essential), and, if its cells may be cut,
the width it may be cut to. The columns that are not essential go first, least
important first, until the rest fit whole; then, cutting the cuttable ones, the
essential columns, least important first, until the rest fit. The spare width goes
back to the cut ones. Shown columns keep their declared order. Pure: the widget
paints the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ELLIPSIS = "…"


@dataclass(frozen=True)
class TableColumn:
    """One column: its header, how much it matters, its alignment, how far it may shrink."""

    name: str
    priority: int
    """Lower is kept longer: the column with the highest number goes first."""
    right: bool = False
    """Right-aligned (numbers)."""
    min_width: int | None = None
    """Cells may be cut (with `…`) down to this many columns; None: never cut."""
    essential: bool = False
    """Part of the answer: cut the cuttable columns before dropping it."""


@dataclass(frozen=True)
class ShownColumn:
    """A column on screen: its index in the table's columns and the width it gets."""

    index: int
    width: int


def _floor(column: TableColumn, natural: int) -> int:
    return natural if column.min_width is None else min(natural, column.min_width)


def fit_columns(
    columns: Sequence[TableColumn], natural: Sequence[int], room: int, gap: int
) -> list[ShownColumn]:
    """The columns to show in `room` columns, `gap` apart, given each column's natural
    width (its widest cell or header). Always keeps the most important one (the view
    then scrolls sideways)."""
    kept = list(range(len(columns)))

    def need(indices: list[int], cuts: bool) -> int:
        if cuts:
            widths = sum(_floor(columns[i], natural[i]) for i in indices)
        else:
            widths = sum(natural[i] for i in indices)
        return widths + gap * (len(indices) - 1)

    def drop(among: list[int]) -> None:
        kept.remove(max(among, key=lambda i: (columns[i].priority, i)))

    while need(kept, cuts=False) > room and (
        extra := [i for i in kept if not columns[i].essential]
    ):
        drop(extra)
    while len(kept) > 1 and need(kept, cuts=True) > room:
        drop(kept)
    spare = max(0, room - need(kept, cuts=True))
    widths = {}
    for i in sorted(kept, key=lambda i: columns[i].priority):  # spare to the important first
        floor = _floor(columns[i], natural[i])
        grow = min(spare, natural[i] - floor)
        widths[i] = floor + grow
        spare -= grow
    return [ShownColumn(i, widths[i]) for i in kept]


def cut(text: str, width: int) -> str:
    """`text` in at most `width` columns, ending `…` where it was cut."""
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + ELLIPSIS if width > 0 else ""
