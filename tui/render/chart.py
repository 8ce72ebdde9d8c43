"""The total against context on a log axis, as Rich text: columns, the available line, a marker,
and measured peaks as points (`◆`) at their context. The value axis fits the data in view
(`ValueAxis`), with the available line drawn when it is in range.

Pure: the caller evaluates the real estimate at `sample_contexts(...)` and hands
the totals in, so the chart can never disagree with the breakdown.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

from rich.style import Style
from rich.text import Text

from core.units import GIB, MIB
from tui.model.chart_data import ENGINE_MARKS, MEASURED_MARK, Point
from tui.model.scales import short_tokens

_BLOCKS = " ▁▂▃▄▅▆▇█"
LABEL_WIDTH = 9


@dataclass(frozen=True)
class ChartStyles:
    """Styles of the chart's parts."""

    fits: Style | str = "green"
    over: Style | str = "red"
    current: Style | str = "bold cyan"
    available: Style | str = "yellow"
    axis: Style | str = "dim"
    measured: Style | str = "bold magenta"


def sample_contexts(lo: int, hi: int, count: int) -> list[int]:
    """`count` contexts from `lo` to `hi`, evenly spaced on a log scale."""
    if count <= 1 or hi <= lo:
        return [hi] * max(count, 1)
    ratio = math.log(hi / lo)
    return [round(lo * math.exp(ratio * i / (count - 1))) for i in range(count)]


def nearest_column(contexts: Sequence[int], tokens: int) -> int:
    """The column whose context is closest to `tokens` on the log scale (the first such
    column on a tie), for contexts in ascending order, as `sample_contexts` gives them.

    The closest is the last context at or below `tokens` or the first above it: two
    candidates, not a logarithm of every column (the chart asks this for the marker and
    each tick on every key)."""
    target = max(tokens, 1)
    above = bisect_right(contexts, target)
    candidates = []
    if above > 0:
        candidates.append(bisect_left(contexts, contexts[above - 1]))  # its first column
    if above < len(contexts):
        candidates.append(above)
    log_target = math.log(target)
    return min(candidates, key=lambda i: abs(math.log(max(contexts[i], 1)) - log_target))


def point_columns(contexts: Sequence[int], points: Sequence[Point]) -> list[Point]:
    """(context, bytes, engine) points as (column, bytes, engine); points outside the
    plotted range are left out rather than drawn at an edge they do not belong to."""
    if not contexts:
        return []
    lo, hi = contexts[0], contexts[-1]
    return [(nearest_column(contexts, c), b, e) for c, b, e in points if lo <= c <= hi]


@dataclass(frozen=True)
class ValueAxis:
    """The value range the rows span: the data in view, not always from 0.

    From the smallest to the largest total and measured peak (with a little room), so a
    small model's columns and points are not squashed under an available line ten times
    higher; the available memory is inside the range when it is near the data (then its
    line is drawn), else a note in the top row says where it is. The axis starts at 0
    when the data nearly reaches it, so a column's height is then its size."""

    floor: int
    top: int
    available: int

    @classmethod
    def fit(cls, values: Sequence[int], available: int) -> ValueAxis:
        """The axis for these totals and peaks against `available` bytes."""
        lo, hi = (min(values), max(values)) if values else (0, 1)
        span = max(hi - lo, hi // 10, 1)
        if available > 0 and lo - span // 2 <= available <= hi + span // 2:
            lo, hi = min(lo, available), max(hi, available)
            span = max(hi - lo, hi // 10, 1)
        floor = max(0, lo - span // 8)
        if floor * 4 <= hi - floor:  # nearly reaches 0: start there
            floor = 0
        return cls(floor, max(hi + span // 12, floor + 1), available)

    @property
    def size(self) -> int:
        """Bytes from the bottom edge to the top one."""
        return self.top - self.floor

    def eighths(self, value: int, height: int) -> int:
        """How many eighths of a row a column of `value` fills (one at least, at the floor)."""
        filled = ((value - self.floor) * height * 8 + self.size // 2) // self.size
        return max(1 if value > 0 else 0, min(height * 8, filled))

    def row(self, value: int, height: int) -> int:
        """The row whose cell holds `value` (the same cell as a column of that height's top)."""
        return max(0, min(height - 1, (self.eighths(value, height) - 1) // 8))

    def available_row(self, height: int) -> int | None:
        """The available line's row, None when it is outside the range."""
        if self.available <= 0 or not self.floor <= self.available <= self.top:
            return None
        return min(height - 1, (self.available - self.floor) * height // self.size)

    def available_note(self) -> str:
        """Where the available memory is when its line is not drawn ("" when it is)."""
        if self.available <= 0 or self.floor <= self.available <= self.top:
            return ""
        where = "above ↑" if self.available > self.top else "below ↓"
        return f" {short_bytes(self.available)} available: {where} "


def short_bytes(b: int) -> str:
    """`76.8 GiB`, `512 MiB`: an axis label."""
    if b >= GIB:
        return f"{b / GIB:.1f} GiB"
    return f"{b / MIB:.0f} MiB"


def render_chart(
    contexts: Sequence[int],
    totals: Sequence[int],
    available: int,
    current: int,
    height: int,
    styles: ChartStyles | None = None,
    points: Sequence[Point] = (),
) -> Text:
    """Columns of `totals` (one per context), `height` rows, plus two axis lines.

    `current` is the column of the context on screen; it is drawn in the
    `current` style and marked under the axis. `points` are (column, bytes)
    measured peaks with their engine, each drawn as the engine's mark (`◆` torch,
    `●` mlx) in the cell that holds its value, over whatever column or line is there.
    """
    styles = styles or ChartStyles()
    width = len(contexts)
    axis = ValueAxis.fit([*totals, *(b for _, b, _ in points)], available)
    eighths = [axis.eighths(t, height) for t in totals]
    found = axis.available_row(height)
    avail_row = -1 if found is None else found
    col_styles = [styles.fits if t <= available else styles.over for t in totals]
    if 0 <= current < width:
        col_styles[current] = styles.current
    marks = {
        (axis.row(b, height), col): ENGINE_MARKS.get(engine, MEASURED_MARK)
        for col, b, engine in points
        if 0 <= col < width
    }
    note = axis.available_note()[:width]
    # Each column's cells bottom to top, then read across as rows (the transposition in
    # C): a plain row is its text cut into the columns' style runs, the same for every
    # row. Rows with the available line, a mark or the note are drawn cell by cell.
    full = height * 8
    stacks = [_stack(min(max(e, 0), full), height) for e in eighths]
    row_text = ["".join(cells) for cells in zip(*stacks, strict=True)] if stacks else [""] * height
    runs: list[tuple[int, int, Style | str]] = []
    start = 0
    for style, group in groupby(col_styles):
        end = start + sum(1 for _ in group)
        runs.append((start, end, style))
        start = end
    marked_rows = {mark_row for mark_row, _ in marks}
    lines: list[Text] = []
    for row in range(height - 1, -1, -1):  # top row first; row 0 is the bottom
        line = Text(no_wrap=True)
        if row == avail_row:
            label, tick = short_bytes(available), "┤"
        elif row == height - 1 and avail_row < height - 3:
            label, tick = short_bytes(axis.top), "┤"
        elif row == 0 and (avail_row > 1 or avail_row < 0):
            label, tick = short_bytes(axis.floor) if axis.floor else "0", "┤"
        else:
            label, tick = "", "│"
        line.append(label.rjust(LABEL_WIDTH - 1)[: LABEL_WIDTH - 1] + " ", styles.axis)
        line.append(tick, styles.available if row == avail_row else styles.axis)
        if row != avail_row and row not in marked_rows and not (row == height - 1 and note):
            text = row_text[row]
            for first, end, style in runs:
                line.append(text[first:end], style)
            lines.append(line)
            continue
        base = row * 8
        fills = [min(8, max(0, e - base)) for e in eighths]
        if row == avail_row:
            cells = [
                ("┈", styles.available) if f == 0 else (_BLOCKS[f], col_styles[i])
                for i, f in enumerate(fills)
            ]
        else:
            cells = [(_BLOCKS[f], col_styles[i]) for i, f in enumerate(fills)]
        for (mark_row, col), mark in marks.items():
            if mark_row == row:
                cells[col] = (mark, styles.measured)
        if row == height - 1 and note:  # the available line is off the range: say where
            cells[: len(note)] = [(ch, styles.available) for ch in note]
        # Runs of one style become one span: a span per cell would cost a frame.
        for style, run in groupby(cells, key=itemgetter(1)):
            line.append("".join(c for c, _ in run), style)
        lines.append(line)
    lines.append(Text(no_wrap=True).append(" " * LABEL_WIDTH + "└" + "─" * width, styles.axis))
    lines.append(tick_line(contexts, current, styles))
    return Text("\n").join(lines)


def _stack(eighths: int, height: int) -> str:
    """One column's cells, bottom to top, for a bar `eighths` eighths of a cell high."""
    whole, part = divmod(eighths, 8)
    if whole >= height:
        return _BLOCKS[8] * height
    return _BLOCKS[8] * whole + _BLOCKS[part] + _BLOCKS[0] * (height - whole - 1)


def tick_line(contexts: Sequence[int], current: int, styles: ChartStyles) -> Text:
    """The context labels under the axis, with `▲` under the `current` column."""
    width = len(contexts)
    cells = [" "] * (width + 1)
    taken = [False] * (width + 1)

    def place(col: int, label: str) -> bool:
        start = min(max(col - len(label) // 2, 0), width - len(label))
        span = range(max(start - 1, 0), min(start + len(label) + 1, width + 1))
        if start < 0 or any(taken[i] for i in span):
            return False
        for i, ch in enumerate(label):
            cells[start + i] = ch
            taken[start + i] = True
        return True

    taken[current] = True  # the marker's cell is never a label's
    place(0, short_tokens(contexts[0]))
    place(width - 1, short_tokens(contexts[-1]))
    tick = 1024
    while tick < contexts[-1]:
        if tick > contexts[0]:
            place(nearest_column(contexts, tick), short_tokens(tick))
        tick *= 4
    text = Text(" " * LABEL_WIDTH + " ", no_wrap=True)
    text.append("".join(cells[:width]), styles.axis)
    marker = current + LABEL_WIDTH + 1
    text = text[:marker] + Text("▲", styles.current) + text[marker + 1 :]
    return text
