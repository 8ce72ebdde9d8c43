"""The text of `vramscope fit`: the ranked table, what was not computed, and the inputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.answer.fit import WHAT_IF_FORMULA, FitRow, rank_key
from core.calibration.record import Calibration
from core.calibration.report import calibration_words, no_calibration_line, row_calibrated_total
from core.display_text import clean_text
from core.units import format_bytes_short

COLUMNS = ("MODEL", "QUANT", "WEIGHTS", "TOTAL", "VERDICT", "SLACK", "MAX CONTEXT", "FROM")
CALIBRATED_COLUMN = "CALIBRATED (vramscope)"


@dataclass(frozen=True)
class CalibratedColumn:
    """`fit --calibrated`: the calibration that applies (None: none does) and the memory
    its verdict is held against."""

    calibration: Calibration | None
    available_bytes: int
    backend: str

    def cell(self, row: FitRow) -> str:
        """`17.81 GiB fits`, `19.2 GiB DOES NOT FIT`, or `none` (no calibration applies)."""
        total = row_calibrated_total(self.calibration, row) if self.calibration else None
        if total is None:
            return "none"
        verdict = "fits" if total <= self.available_bytes else "DOES NOT FIT"
        return f"{format_bytes_short(total)} {verdict}"

    def note(self) -> str:
        """What the column is, under the table."""
        if self.calibration is None:
            return "CALIBRATED:" + no_calibration_line(self.backend, None).removeprefix(
                "  Calibrated (vramscope):"
            )
        return f"CALIBRATED: {calibration_words(self.calibration)}; not mlxcel's figure."


def context_cell(row: FitRow) -> str:
    """`131,072`, `4,294,967,296+` (the search bound still fits) or `none`."""
    limit = row.largest_context
    if limit is None or limit.value is None:
        return "none"
    return f"{limit.value:,}" + ("+" if limit.unbounded else "")


def table_row(row: FitRow) -> tuple[str, ...]:
    """One line's cells; every row here has numbers."""
    fits = bool(row.fits)
    margin = row.slack_bytes if fits else row.overflow_bytes
    quant = row.quantization + ("*" if row.formula == WHAT_IF_FORMULA else "")
    cells = (
        row.model,
        quant,
        format_bytes_short(row.weights_bytes or 0),
        format_bytes_short(row.total_bytes or 0),
        "FITS" if fits else "DOES NOT FIT",
        ("" if fits else "-") + format_bytes_short(margin or 0),
        context_cell(row),
        row.where,
    )
    return tuple(clean_text(c) for c in cells)


def format_table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart; sizes right-aligned; the last column unpadded."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {2, 3, 5, 6}
    lines = []
    for row in rows:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row[:-1], widths, strict=False))
        ]
        lines.append(("  ".join(cells) + "  " + row[-1]).rstrip())
    return lines


def fit_text(
    rows: Sequence[FitRow], heading: Sequence[str], calibrated: CalibratedColumn | None = None
) -> list[str]:
    """The whole report: heading lines, the table, the notes."""
    ranked = [r for r in rows if r.unavailable is None]
    missing = [r for r in rows if r.unavailable is not None]
    lines = [clean_text(h) for h in heading]
    lines.append("")
    if ranked:
        table = [COLUMNS, *(table_row(r) for r in ranked)]
        if calibrated is not None:  # before FROM, which stays last and unpadded
            cells = [CALIBRATED_COLUMN, *(calibrated.cell(r) for r in ranked)]
            table = [(*t[:-1], c, t[-1]) for t, c in zip(table, cells, strict=True)]
        lines.extend(format_table(table))
    else:
        lines.append("no rows")
    fitting = sum(1 for r in ranked if r.fits)
    lines.append("")
    lines.append(f"{fitting} of {len(ranked)} rows fit.")
    if any(r.formula == WHAT_IF_FORMULA for r in ranked):
        lines.append(
            f"* {WHAT_IF_FORMULA}: vramscope's own count of the weights mlx_lm.convert -q "
            "would write, in mlxcel's estimate; not an mlxcel figure (docs/fit.md)."
        )
    if calibrated is not None:
        lines.append(clean_text(calibrated.note()))
    if missing:
        lines.append("")
        lines.append("Not computed:")
        lines.extend(clean_text(f"  {r.model} {r.quantization}: {r.unavailable}") for r in missing)
    return lines


# --- the explorer's Fits view: its sort orders and its filter (pure) ------------------

RANK = "RANK"
"""The default order: `vramscope fit`'s ranking (core.answer.fit.rank_key)."""
SORTS = (RANK, *COLUMNS)
"""What `s` steps through in the Fits view, and what a header click picks."""
RIGHT_ALIGNED = frozenset({"WEIGHTS", "TOTAL", "SLACK", "MAX CONTEXT"})


def signed_slack(row: FitRow) -> int:
    """Slack, or the overflow as a negative number."""
    return (row.slack_bytes or 0) if row.fits else -(row.overflow_bytes or 0)


def column_key(column: str, row: FitRow) -> tuple[object, ...]:
    """The sort key of one column (ascending), ties in the ranking's order."""
    value: object
    if column == "MODEL":
        value = row.model.casefold()
    elif column == "QUANT":
        value = (row.bits, row.quantization)
    elif column == "WEIGHTS":
        value = row.weights_bytes or 0
    elif column == "TOTAL":
        value = row.total_bytes or 0
    elif column == "VERDICT":
        value = not row.fits
    elif column == "SLACK":
        value = signed_slack(row)
    elif column == "MAX CONTEXT":
        value = row.largest_context_tokens or 0
    elif column == "FROM":
        value = row.where.casefold()
    else:
        value = 0
    return (value, rank_key(row))


def sorted_rows(rows: Sequence[FitRow], column: str, descending: bool) -> list[FitRow]:
    """`rows` in the order of a column (RANK: `vramscope fit`'s order)."""
    if column == RANK:
        ordered = sorted(rows, key=rank_key)
        return ordered[::-1] if descending else ordered
    return sorted(rows, key=lambda r: column_key(column, r), reverse=descending)


def matches(row: FitRow, text: str) -> bool:
    """The filter: every word typed appears in the model, its quantization or its source."""
    haystack = f"{row.model} {row.quantization} {row.where}".casefold()
    return all(word in haystack for word in text.casefold().split())
