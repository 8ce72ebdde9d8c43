"""The text of `vramscope fit`: the ranked table, what was not computed, and the inputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.answer.fit import WHAT_IF_FORMULA, FitRow, rank_key
from core.answer.question import Question
from core.answer.verdict import Scope, Verdict, verdict_words
from core.calibration.record import Calibration
from core.calibration.report import calibration_words, load_fit_words
from core.display_text import clean_text
from core.units import format_bytes_short
from tui.render.table_columns import TableColumn

FIT_COLUMNS = (
    # The answer first: which model, as what, how much, does it fit, how long a context.
    # LOAD is vramscope's load (mlx-lm); VERDICT, SLACK and MAX CONTEXT go by it where a
    # row has one. TOTAL and MLXCEL are mlxcel's estimate and its preflight verdict.
    TableColumn("MODEL", 0, min_width=16, essential=True),
    TableColumn("QUANT", 1, essential=True),
    TableColumn("WEIGHTS", 8, right=True),
    TableColumn("TOTAL", 6, right=True),
    TableColumn("LOAD", 2, right=True, essential=True),
    TableColumn("VERDICT", 3, essential=True),
    TableColumn("MLXCEL", 5, essential=True),
    TableColumn("SLACK", 7, right=True),
    TableColumn("MAX CONTEXT", 4, right=True, essential=True),
    TableColumn("FROM", 9),
)
"""The table's columns in `vramscope fit`'s order; where the terminal is too narrow the
Fits view drops the others first, then cuts model names (`tui.render.table_columns`)."""
COLUMNS = tuple(c.name for c in FIT_COLUMNS)
RIGHT = frozenset(i for i, c in enumerate(FIT_COLUMNS) if c.right)
NO_LOAD = "—"
"""The LOAD cell of a row with no load (a split, a family the load cannot read)."""
LOAD_NOTE = (
    "LOAD: vramscope's load (mlx-lm), which VERDICT, SLACK and MAX CONTEXT follow; "
    "TOTAL and MLXCEL: mlxcel's."
)
CALIBRATED_COLUMN = "CALIBRATED (vramscope)"
LOAD_CALIBRATED_COLUMN = "LOAD CALIBRATED (vramscope)"


@dataclass(frozen=True)
class CalibratedColumn:
    """`fit --calibrated`: the calibration that applies (None: none does) and the memory
    its verdict is held against."""

    calibration: Calibration | None
    available_bytes: int
    backend: str
    reason: str = ""
    """Why no calibration applies to the device ("" when one does)."""

    def cell(self, row: FitRow) -> str:
        """`17.81 GiB FITS`, `19.2 GiB DOES NOT FIT`, or `none` (no calibration applies):
        the row's own answer's calibrated total."""
        cal = row.found.calibrated if row.found is not None else None
        if cal is None or cal.total_bytes is None:
            return "none"
        return f"{format_bytes_short(cal.total_bytes)} {verdict_words(cal.verdict)}"

    @property
    def has_load(self) -> bool:
        """Whether the calibration carries a fit of the mlx-lm load (its own column)."""
        return self.calibration is not None and self.calibration.load is not None

    def load_cell(self, row: FitRow) -> str:
        """`7.45 GiB FITS`: the row's mlx-lm load with the calibration's transient scale
        and fixed part (`inspect --calibrated`'s `Load calibrated` line), or `none`."""
        cal = row.found.calibrated if row.found is not None else None
        if cal is None or cal.load_total_bytes is None:
            return "none"
        return f"{format_bytes_short(cal.load_total_bytes)} {verdict_words(cal.load_verdict)}"

    def note(self) -> str:
        """What the column is, under the table."""
        if self.calibration is None:
            why = self.reason or f"no calibration for {self.backend}"
            return f"CALIBRATED: {why}; mlxcel's estimate only (vramscope calibrate fits one)"
        return f"CALIBRATED: {calibration_words(self.calibration)}; not mlxcel's figure."

    def load_note(self) -> str:
        """What the load's column is, under the table."""
        fit = self.calibration.load if self.calibration is not None else None
        if fit is None:
            return ""
        return (
            f"LOAD CALIBRATED: LOAD (the mlx-lm load) with {load_fit_words(fit)}, fitted on"
            " the same runs; none where a row has no mlx-lm load; not mlxcel's figure."
        )


def fit_heading(question: Question) -> list[str]:
    """The lines above the table (`vramscope fit`'s and the Fits view's): the device's
    reading when one was taken, the available memory and its source, the backend and why,
    and the workload asked of every model."""
    device, wl = question.device, question.workload
    lines = [
        f"Available: {format_bytes_short(device.available.bytes)} "
        f"({device.available.bytes} bytes; {device.available.source})",
        f"Backend: {device.words}; context {wl.max_tokens:,} tokens, "
        f"batch {wl.batch}, KV {wl.kv_cache_mode}",
    ]
    if device.reading is not None:
        lines.insert(0, device.reading.line)
    return lines


FAULT_MARK = "(!)"
"""A model whose estimate fell back past a file fault, as `vramscope models` marks it."""


def context_cell(row: FitRow) -> str:
    """`131,072`, `4,294,967,296+` (the search bound still fits), `4,096 trained` (memory
    would hold more than the model was trained for) or `none`: by the load where the row
    has one, else by mlxcel's estimate."""
    context = row.best_context
    if context is None or context.tokens is None:
        return "none"
    if context.capped:
        return f"{context.tokens:,} trained"
    return f"{context.tokens:,}" + ("+" if context.unbounded else "")


def verdict_cell(row: FitRow) -> str:
    """`FITS`, `DOES NOT FIT`, or `PAST TRAINED` (it fits the memory, but the context
    asked is more than the model was trained for): the load's where the row has one."""
    if row.ranked_fits and row.past_trained:
        return "PAST TRAINED"
    return verdict_words(Verdict(Scope.LOAD, bool(row.ranked_fits)))


def mlxcel_cell(row: FitRow) -> str:
    """mlxcel's preflight verdict, the one mlxcel refuses a load by."""
    return verdict_words(Verdict(Scope.DEVICE, bool(row.fits)))


def load_cell(row: FitRow) -> str:
    """The load's total, or `—` where the row has none."""
    load = row.load
    return format_bytes_short(load.total_bytes) if load is not None else NO_LOAD


def table_row(row: FitRow) -> tuple[str, ...]:
    """One line's cells; every row here has numbers."""
    margin = row.margin_bytes or 0
    quant = row.quantization.word + ("*" if row.quantization.is_what_if else "")
    cells = (
        row.model + (f" {FAULT_MARK}" if row.warnings else ""),
        quant,
        format_bytes_short(row.weights_bytes or 0),
        format_bytes_short(row.total_bytes or 0),
        load_cell(row),
        verdict_cell(row),
        mlxcel_cell(row),
        ("-" if margin < 0 else "") + format_bytes_short(abs(margin)),
        context_cell(row),
        row.where,
    )
    return tuple(clean_text(c) for c in cells)


def format_table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart; sizes right-aligned; the last column unpadded."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = RIGHT
    lines = []
    for row in rows:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row[:-1], widths, strict=False))
        ]
        lines.append(("  ".join(cells) + "  " + row[-1]).rstrip())
    return lines


def faults_and_skips(rows: Sequence[FitRow], skipped: Sequence[str]) -> str | None:
    """`2 skipped; 3 models with file faults (!)`, as `vramscope models` counts them, or
    None when there is nothing to say."""
    flagged = len({r.model for r in rows if r.warnings})
    words = [f"{len(skipped)} skipped"] if skipped else []
    if flagged:
        words.append(f"{flagged} model{'s' if flagged != 1 else ''} with file faults {FAULT_MARK}")
    return "; ".join(words) or None


def fit_text(
    rows: Sequence[FitRow],
    heading: Sequence[str],
    calibrated: CalibratedColumn | None = None,
    skipped: Sequence[str] = (),
) -> list[str]:
    """The whole report: heading lines, the table, the notes, the file faults the rows
    fell back past and the models `skipped` (with why)."""
    ranked = [r for r in rows if r.unavailable is None]
    missing = [r for r in rows if r.unavailable is not None]
    lines = [clean_text(h) for h in heading]
    lines.append("")
    if ranked:
        table = [COLUMNS, *(table_row(r) for r in ranked)]
        if calibrated is not None:  # before FROM, which stays last and unpadded
            cells = [CALIBRATED_COLUMN, *(calibrated.cell(r) for r in ranked)]
            table = [(*t[:-1], c, t[-1]) for t, c in zip(table, cells, strict=True)]
            if calibrated.has_load:
                cells = [LOAD_CALIBRATED_COLUMN, *(calibrated.load_cell(r) for r in ranked)]
                table = [(*t[:-1], c, t[-1]) for t, c in zip(table, cells, strict=True)]
        lines.extend(format_table(table))
    else:
        lines.append("no rows")
    fitting = sum(1 for r in ranked if r.ranked_fits and not r.past_trained)
    past = sum(1 for r in ranked if r.ranked_fits and r.past_trained)
    refused = sum(1 for r in ranked if r.load_fits and r.fits is False)
    lines.append("")
    counts = faults_and_skips(rows, skipped)
    lines.append(f"{fitting} of {len(ranked)} rows fit." + (f" {counts}." if counts else ""))
    if past:
        lines.append(
            f"PAST TRAINED: {past} rows fit the memory at this context, but it is past the "
            "model's trained context (MAX CONTEXT then shows the trained one)."
        )
    if any(r.load is not None for r in ranked):
        lines.append(LOAD_NOTE)
    if refused:
        lines.append(
            f"MLXCEL DOES NOT FIT where VERDICT FITS ({refused} "
            f"row{'s' if refused != 1 else ''}): mlxcel's preflight would refuse "
            f"{'them' if refused != 1 else 'it'}; mlx-lm loads "
            f"{'them' if refused != 1 else 'it'}."
        )
    if any(r.quantization.is_what_if for r in ranked):
        lines.append(
            f"* {WHAT_IF_FORMULA}: vramscope's own count of the weights mlx_lm.convert -q "
            "would write, in mlxcel's estimate; not an mlxcel figure (docs/fit.md)."
        )
    if calibrated is not None:
        lines.append(clean_text(calibrated.note()))
        if calibrated.has_load:
            lines.append(clean_text(calibrated.load_note()))
    if missing:
        lines.append("")
        lines.append("Not computed:")
        lines.extend(
            clean_text(f"  {r.model} {r.quantization.word}: {r.unavailable}") for r in missing
        )
    faults = {r.model: r.warnings for r in rows if r.warnings}
    if faults:
        lines.append("")
        lines.append(f"File faults {FAULT_MARK} (the estimate fell back past them):")
        lines.extend(clean_text(f"  {m}: {w}") for m, ws in faults.items() for w in ws)
    if skipped:
        lines.append("")
        lines.append("Skipped:")
        lines.extend(clean_text(f"  {s}") for s in skipped)
    return lines


# --- the explorer's Fits view: its sort orders and its filter (pure) ------------------

RANK = "RANK"
"""The default order: `vramscope fit`'s ranking (core.answer.fit.rank_key)."""
SORTS = (RANK, *COLUMNS)
"""What `s` steps through in the Fits view, and what a header click picks."""


def signed_slack(row: FitRow) -> int:
    """Slack, or the overflow as a negative number (the load's where the row has one)."""
    return row.margin_bytes or 0


def column_key(column: str, row: FitRow) -> tuple[object, ...]:
    """The sort key of one column (ascending), ties in the ranking's order."""
    value: object
    if column == "MODEL":
        value = row.model.casefold()
    elif column == "QUANT":
        value = (row.bits, row.quantization.word)
    elif column == "WEIGHTS":
        value = row.weights_bytes or 0
    elif column == "TOTAL":
        value = row.total_bytes or 0
    elif column == "LOAD":
        value = (row.load is None, row.load.total_bytes if row.load else 0)
    elif column == "VERDICT":
        value = (not row.ranked_fits, row.past_trained)
    elif column == "MLXCEL":
        value = not row.fits
    elif column == "SLACK":
        value = signed_slack(row)
    elif column == "MAX CONTEXT":
        best = row.best_context
        value = (best.tokens if best is not None else None) or 0
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
    haystack = f"{row.model} {row.quantization.word} {row.where}".casefold()
    return all(word in haystack for word in text.casefold().split())
