"""The estimate, term by term: size, exact bytes, a bar against available memory, and the note.

It shows one of three things in the same place: the breakdown, a "reading"
line while a model loads in a worker, or the error that stopped a model from
loading. The columns line up whatever the values (the bytes column is as wide
as its widest number) and the notes are the banner's own words.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Hashable
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip

from core.answer.verdict import amount_words, verdict_words
from core.units import format_bytes_short
from tui.model.rows import TERM_KEYS, BreakdownRow, EstimateView, LoadCell, LoadColumn, RowKey
from tui.render.bars import bar, stacked_bar
from tui.widgets.repaint import KeptLines, KeptStyles, line_strip

if TYPE_CHECKING:  # a GGUF's: its words are read when one is on screen
    from tui.gguf.words import GgufView

Block = tuple[Hashable | None, Callable[[], Text]]
"""Lines of the table: what their words depend on (None: made anew), and their maker."""

MIN_WRAPPED_NOTE = 40
"""Notes narrower than this are cut with an ellipsis rather than wrapped into a column."""

MIN_LOAD_NOTE = 24
"""With the load's column, a note narrower than this gives up the bar."""

SAME_LINE_LOAD_VERDICT = 90
"""From this width the load's verdict, where it agrees, goes on mlxcel's verdict's line."""

MIN_BARE_NOTE = 10
"""With the load's column and no bar, a note narrower than this gives up mlxcel's exact
bytes column."""


def _shape(view: EstimateView) -> tuple[object, ...]:
    """What the height depends on: rows, wrapped text lengths, warnings (not the values)."""
    return (
        tuple((r.key, len(r.note), bool(r.subnote)) for r in view.rows),
        len(view.context_limit),
        len(view.inflight_limit),
        len(view.sizing),
        view.warnings,
        (len(view.calibrated.line), len(view.calibrated.load_line)) if view.calibrated else None,
        _load_shape(view),
    )


def _load_shape(view: EstimateView) -> tuple[object, ...] | None:
    """What the load column adds to the height: whether the verdicts disagree (and which
    way), its notes, which rows carry its words (one line each), its heading."""
    load = view.load
    if load is None:
        return None
    details = tuple(bool(load.cell(r.key).detail) for r in view.rows)
    return (load.disagrees, load.fits, load.load.notes, details, len(load.heading))


_Lines = list[tuple[object, Strip]]
"""A block's lines: each with what it was drawn from (its words and styles)."""


class Breakdown(KeptLines):
    """The breakdown table, or a loading line, or an error, in place."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "breakdown--weights",
        "breakdown--kv",
        "breakdown--activation",
        "breakdown--overhead",
        "breakdown--inflight",
        "breakdown--available",
        "breakdown--fits",
        "breakdown--over",
        "breakdown--warning",
        "breakdown--error",
        "breakdown--muted",
    }

    DEFAULT_CSS = """
    Breakdown {
        height: auto;
        & > .breakdown--weights { color: $primary; }
        & > .breakdown--kv { color: $secondary; }
        & > .breakdown--activation { color: $success-darken-1; }
        & > .breakdown--overhead { color: $warning-darken-2; }
        & > .breakdown--inflight { color: $error-lighten-1; }
        & > .breakdown--available { color: $foreground 25%; }
        & > .breakdown--fits { background: $success; color: $background; text-style: bold; }
        & > .breakdown--over { background: $error; color: $background; text-style: bold; }
        & > .breakdown--warning { color: $warning; }
        & > .breakdown--error { color: $error; text-style: bold; }
        & > .breakdown--muted { color: $text-muted; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._view: EstimateView | None = None
        self._message: tuple[bool, str, tuple[str, ...]] | None = (False, "Starting…", ())
        """(an error rather than a loading line, its text, its warnings), or None."""
        self._heading = ""
        """The error's first line ("" = "Cannot read this model")."""
        self._gguf: GgufView | None = None
        """llama.cpp's load of a GGUF on screen, in place of mlxcel's table."""
        self._shape: tuple[object, ...] = ()
        self._cache: tuple[int, list[Strip]] | None = None
        self._blocks: dict[Hashable, _Lines] = {}
        self._lines: dict[object, Strip] = {}
        """The last view's lines by their words and styles (`_view_strips`)."""
        self._kept = KeptStyles(self)

    def notify_style_update(self) -> None:
        self._kept.clear()
        self._cache, self._blocks, self._lines = None, {}, {}  # they carry the old styles
        super().notify_style_update()

    @property
    def view(self) -> EstimateView | None:
        """The estimate on screen, or None while loading or after an error."""
        return self._view if self._message is None and self._gguf is None else None

    @property
    def gguf(self) -> GgufView | None:
        """llama.cpp's load on screen (a GGUF), or None."""
        return self._gguf if self._message is None else None

    def show_estimate(self, view: EstimateView) -> None:
        """Show an estimate (a relayout only when its height may have changed)."""
        shape = _shape(view)
        relayout = self._message is not None or self._gguf is not None or shape != self._shape
        self._view, self._message, self._shape, self._gguf = view, None, shape, None
        self._changed(relayout)

    def show_gguf(self, view: GgufView) -> None:
        """Show llama.cpp's load of a GGUF, each term split between the device and the host."""
        shape = ("gguf", len(view.rows), len(view.lines), view.notes, view.device_total is None)
        relayout = self._message is not None or self._gguf is None or shape != self._shape
        self._gguf, self._message, self._shape = view, None, shape
        self._changed(relayout)

    def show_loading(self, text: str) -> None:
        """Show a loading line in place of the table."""
        self._message = (False, text, ())
        self._changed(True)

    def show_error(self, text: str, warnings: tuple[str, ...] = (), heading: str = "") -> None:
        """Show why a model could not be read (or, with `heading`, what else went wrong),
        in place of the table."""
        self._message, self._heading = (True, text, warnings), heading
        self._changed(True)

    def _changed(self, relayout: bool) -> None:
        before, self._cache = self._cache, None
        width = self.size.width
        if relayout:
            self.refresh(layout=True)
        elif before is None or before[0] != width:
            self.refresh()
        else:
            # Only the lines that changed: a token key changes a third of them.
            lines = self._strips(width)
            if len(lines) != len(before[1]):
                self.refresh()
                return
            changed = [
                y for y, (old, new) in enumerate(zip(before[1], lines, strict=True)) if old != new
            ]
            if changed:
                self.refresh(*(Region(0, y, width, 1) for y in changed))

    def _style(self, name: str) -> Style:
        return self._kept.component(f"breakdown--{name}")

    # The Line API: the lines are built once per change and width, then served as
    # strips; painting a Rich renderable instead cost several milliseconds a frame.

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._strips(width))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        strips = self._strips(width)
        base = self._kept.base()
        if y < len(strips):
            return strips[y].adjust_cell_length(width, base)
        return Strip.blank(width, base)

    def _strips(self, width: int) -> list[Strip]:
        if self._cache is None or self._cache[0] != width:
            base = self._kept.base()
            console = self.app.console
            if self._message is None and self._gguf is not None:
                lines = [list(line.render(console)) for line in self._gguf_lines(width)]
                self._cache = (width, [Strip(line).apply_style(base) for line in lines])
            elif self._message is None:
                assert self._view is not None
                self._cache = (width, self._view_strips(self._view, width))
            else:
                lines = [list(line.render(console)) for line in self._message_lines(width)]
                self._cache = (width, [Strip(line).apply_style(base) for line in lines])
        return self._cache[1]

    def _view_strips(self, view: EstimateView, width: int) -> list[Strip]:
        """The table's lines, block by block (a row, the header, the verdict): a block
        whose words and widths did not change keeps its lines from the last change. A
        token key changes three or four rows of eight, and rendering the whole table
        again was the largest part of a key's work (1.0 ms of 3.2)."""
        console, base = self.app.console, self._kept.base()
        kept: dict[Hashable, _Lines] = {}
        lines_before: dict[object, Strip] = self._lines
        lines_now: dict[object, Strip] = {}
        out: list[Strip] = []
        for key, make in self._view_blocks(view, width):
            block = self._blocks.get(key) if key is not None else None
            if block is None:
                text = make()  # an empty block (no header at narrow widths) has no line
                block = []
                # A block made again keeps the lines whose words and styles stayed (a
                # row's notes, most of the verdict's lines): only the others are drawn.
                for line in text.split("\n") if text.plain else ():
                    block.append(line_strip(line, lines_before, console, base))
            if key is not None:
                kept[key] = block
            lines_now.update(block)
            out += (strip for _, strip in block)
        self._blocks, self._lines = kept, lines_now  # this view's only: they never grow
        return out

    def _message_lines(self, width: int) -> list[Text]:
        assert self._message is not None
        error, text, warnings = self._message
        out: list[Text] = []
        if error:
            out.append(_styled(self._heading or "Cannot read this model", self._style("error")))
            out += _wrapped(text, width, Style())
            out.append(Text(""))
            out += _wrapped(
                "The controls still work; pick another model from the list.",
                width,
                self._style("muted"),
            )
        else:
            out += _wrapped(text, width, self._style("muted"))
        for warning in warnings:
            out += _wrapped(f"⚠ {warning}", width, self._style("warning"))
        return out

    def _gguf_lines(self, width: int) -> list[Text]:
        """llama.cpp's load: a row per kind of term with its device and host shares, the
        totals per place, the verdict, then the offload and the limits (`inspect`'s words)."""
        view = self._gguf
        assert view is not None
        width = max(width, 40)
        muted = self._style("muted")
        out = _wrapped(view.heading, width, muted)
        kind_w = max(9, *(len(r.kind) for r in view.rows))
        size_w = 10
        note_w = width - kind_w - 2 * size_w - 6
        head = f"{'':<{kind_w}}  {'ON DEVICE':>{size_w}}  {'ON HOST':>{size_w}}"
        out.append(_styled(head + ("  NOTE" if note_w >= 12 else ""), muted))

        def cell(value: int | None) -> str:
            return f"{format_bytes_short(value) if value is not None else '-':>{size_w}}"

        for row in view.rows:
            style = self._style(_GGUF_STYLES.get(row.kind, "weights"))
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{row.kind:<{kind_w}}", style)
            line.append(f"  {cell(row.device_bytes)}  {cell(row.host_bytes)}")
            if note_w >= 12 and row.note:
                line.append("  " + _fit(row.note, note_w, False)[0], muted)
            out.append(line)
        total = Text(no_wrap=True, overflow="ellipsis")
        total.append(f"{'total':<{kind_w}}", "bold")
        total.append(f"  {cell(view.device_total)}  {cell(view.host_total)}", "bold")
        if note_w >= 12:
            all_words = f"{format_bytes_short(view.total_bytes)} ({view.total_bytes:,} bytes)"
            total.append("  " + _fit(f"{all_words} in all", note_w, False)[0], muted)
        out.append(total)
        verdict = Text()
        if view.fits is not None:
            badge = "FITS" if view.fits else "DOES NOT FIT"
            verdict.append(f" {badge} ", self._style("fits" if view.fits else "over"))
            verdict.append(" ")
        verdict.append(view.held)
        out += list(verdict.wrap(self.app.console, width))
        for words in view.lines:
            out += _wrapped(words, width, Style())
        for note in view.notes:
            out += _wrapped(f"note: {note}", width, muted)
        return out

    def _view_blocks(self, view: EstimateView, width: int) -> list[Block]:
        """The table as blocks of whole lines, each with what its words depend on (None:
        made anew each time), in order."""
        width = max(width, 40)
        # Narrow screens keep every row on one line so the verdict stays in view;
        # elsewhere notes wrap and the columns get a header.
        wide = not self.screen.has_class("-narrow")
        available = next(r.bytes for r in view.rows if r.key is RowKey.AVAILABLE)
        load = view.load
        # Minimum widths keep the columns still while rows come and go.
        label_w = max(17, *(len(r.label) for r in view.rows))
        size_w = max(9, *(len(format_bytes_short(r.bytes)) for r in view.rows))
        bytes_w = max(13, *(len(f"{r.bytes:,}") for r in view.rows))
        load_w = 0 if load is None else max(9, len(load.heading))
        # Two spaces after the label, the size, the bytes, the load's cell when a bar
        # follows it, and before the note.
        gaps = 8 + (2 if load else 0)
        room = width - label_w - size_w - bytes_w - load_w - gaps  # may be short of 0
        bar_w = max(6, min(20, max(0, room) // 4))
        if load is not None:
            # Where room is short the bar goes first, then mlxcel's exact bytes (the size
            # beside them says as much); the bar gives way before the notes stop wrapping.
            bar_w = max(6, min(bar_w, room - MIN_WRAPPED_NOTE))
            if room - bar_w < MIN_LOAD_NOTE:
                bar_w, gaps = 0, gaps - 2
                room += 2
                if room < MIN_BARE_NOTE:
                    room, bytes_w, gaps = room + bytes_w + 2, 0, gaps - 2
        room = max(0, room)
        note_w = max(1, room - bar_w)
        wrap = wide and note_w >= MIN_WRAPPED_NOTE
        lead = label_w + size_w + bytes_w + load_w + bar_w + gaps
        columns = (width, label_w, size_w, bytes_w, load_w, bar_w, note_w, wrap)
        muted = self._style("muted")

        def head() -> Text:
            # Plain lines of fixed-width cells: several times cheaper to paint than a Table.
            out = Text(no_wrap=True, overflow="crop")
            for warning in view.warnings:
                for line in _wrapped(f"⚠ {warning}", width, self._style("warning")):
                    out.append_text(line)
                    out.append("\n")
            if wide:
                heads = f"{'Term':<{label_w}}  {'mlxcel' if load else 'Size':>{size_w}}  "
                heads += f"{'Bytes':>{bytes_w}}  " if bytes_w else ""
                heads += f"{load.heading:>{load_w}}" + ("  " if bar_w else "") if load else ""
                share = ("vs available" if bar_w >= 12 else "share") if bar_w else ""
                out.append(f"{heads}{share:<{bar_w}}  Source\n", muted)
                out.append("─" * width + "\n", muted)
            return out

        def row_text(row: BreakdownRow, row_bar: Text, rule: bool = False) -> Text:
            out = Text(no_wrap=True, overflow="crop")
            if rule:  # the total's line above it
                out.append("─" * width + "\n", muted)
            cells = f"{row.label:<{label_w}}  {format_bytes_short(row.bytes):>{size_w}}  "
            cells += f"{row.bytes:>{bytes_w},}  " if bytes_w else ""
            out.append(cells, Style(bold=True) if rule else None)
            # (words, whether they may wrap): the load's words stay on one line.
            notes = [(n, wrap) for n in (row.note, row.subnote) if n] or [("", wrap)]
            if load is not None:
                cell = load.cell(row.key)
                shown = "—" if cell.bytes is None else format_bytes_short(cell.bytes)
                shown = "" if row.key is RowKey.AVAILABLE else shown
                out.append(f"{shown:>{load_w}}" + ("  " if bar_w else ""))
                if cell.detail and wrap:
                    notes.append((f"{load.load.engine.label}: {cell.detail}", False))
                if row.key is RowKey.TOTAL and not wide and not row.note:
                    # No header row on a narrow screen: the Total row names the column.
                    notes = [(f"← {load.heading}", False)]
            if bar_w:
                out.append_text(row_bar)
            first = True
            for note, wraps in notes:
                for piece in _fit(note, note_w, wraps):
                    if not first:
                        out.append("\n" + " " * lead)
                    out.append(f"  {piece}" if first else piece, muted)
                    first = False
            out.append("\n")
            return out

        def beside(row: BreakdownRow) -> LoadCell | None:
            """The load's cell on the row: its words, part of what the row's lines show."""
            return load.cell(row.key) if load is not None else None

        def term(row: BreakdownRow) -> Block:
            style = self._style(row.key.value)
            return (row, columns, available, beside(row)), lambda: row_text(
                row, bar(row.bytes, available, bar_w, style)
            )

        def total(row: BreakdownRow, parts: tuple[tuple[int, Style], ...]) -> Block:
            over = self._style("over") if available else Style()
            return (row, columns, available, parts, beside(row)), lambda: row_text(
                row, stacked_bar(list(parts), available, bar_w, over), rule=True
            )

        def other(row: BreakdownRow) -> Block:
            return (row, columns, beside(row)), lambda: row_text(
                row, Text("━" * bar_w, self._style("available"))
            )

        def verdicts() -> Text:
            out = Text(no_wrap=True, overflow="crop")
            self._verdicts(out, view, width, wrap)
            return out

        def limits() -> Text:
            out = Text(no_wrap=True, overflow="crop")
            for label, value in (
                ("Largest context that fits    ", view.context_limit),
                ("Largest in-flight that fits  ", view.inflight_limit),
                ("mlxcel would size            ", view.sizing),
            ):
                if not value:
                    continue
                for i, piece in enumerate(_fit(value, width - len(label), True)):
                    out.append(label if i == 0 else " " * len(label), muted)
                    out.append(piece + "\n")
            return out

        blocks: list[Block] = [(("head", view.warnings, wide, columns), head)]
        parts: list[tuple[int, Style]] = []
        for row in view.rows:
            if row.key in TERM_KEYS:
                parts.append((row.bytes, self._style(row.key.value)))
                blocks.append(term(row))
            elif row.key is RowKey.TOTAL:
                blocks.append(total(row, tuple(parts)))
            else:
                blocks.append(other(row))
        blocks.append((None, verdicts))
        limit_words = (view.context_limit, view.inflight_limit, view.sizing)
        blocks.append((("limits", width, limit_words), limits))
        return blocks

    def _verdicts(self, out: Text, view: EstimateView, width: int, notes: bool) -> None:
        """mlxcel's verdict; with a calibration, vramscope's under it and which one the
        colour (and the summary line) is held against. The other badge is muted."""
        muted = self._style("muted")
        cal = view.calibrated
        on_cal = view.calibrated_basis

        def badge(label: str, fits: bool, held: bool) -> None:
            out.append(f" {label} ", self._style("fits" if fits else "over") if held else muted)

        badge(verdict_words(view.verdict), bool(view.verdict.fits), not on_cal)
        load = view.load
        if cal is None and (load is None or not load.disagrees):
            out.append(f"  {amount_words(view.verdict)}")
            if load is not None and width >= SAME_LINE_LOAD_VERDICT:
                out.append(f" · {_load_words(load)}", muted)
                out.append("\n")
                self._load_notes(out, view, width, notes)
                return
            out.append("\n")
            self._load_verdict(out, view, width, notes)
            return
        out.append("  mlxcel: ", muted)
        out.append(f"{amount_words(view.verdict)}\n")
        self._load_verdict(out, view, width, notes)
        if cal is None:
            return
        cal_words = verdict_words(cal.verdict)
        lead = len(cal_words) + 4
        badge(cal_words, bool(cal.fits), on_cal)
        for i, piece in enumerate(_wrap(cal.line, max(20, width - lead))):
            out.append(("  " if i == 0 else " " * lead) + piece + "\n")
        # the load calibrated by the same calibration, under it (no verdict badge: the
        # verdict stays held against the total above)
        for piece in _wrap(cal.load_line, max(20, width - lead)):
            out.append(" " * lead + piece + "\n")
        held = "vramscope's calibrated total" if on_cal else "mlxcel's estimate"
        other = "mlxcel's" if on_cal else "the calibrated one"
        words = f"Verdict held against {held} (v: against {other})"
        for piece in _wrap(words, max(20, width)):
            out.append(piece + "\n", muted)

    def _load_verdict(self, out: Text, view: EstimateView, width: int, notes: bool) -> None:
        """The load's verdict under mlxcel's where the two disagree: a badge of its own
        and why; then the load's notes."""
        load = view.load
        if load is None:
            return
        muted = self._style("muted")
        v = load.verdict
        if load.disagrees:
            out.append(f" {verdict_words(v)} ", self._style("fits" if v.fits else "over"))
            out.append(f"  {load.heading}: {amount_words(v)}\n")
            for piece in _wrap(load.disagreement, max(20, width)):
                out.append(piece + "\n", muted)
        # Where they agree and mlxcel's line has no room for it, the load's total on the
        # Total row says it: no line of its own (the chart keeps its rows).
        self._load_notes(out, view, width, notes)

    def _load_notes(self, out: Text, view: EstimateView, width: int, notes: bool) -> None:
        """The load's notes (why it differs from mlxcel's), where the notes have room."""
        if view.load is None or not notes:
            return
        for line in view.load.load.notes:
            for piece in _wrap(line, max(20, width)):
                out.append(piece + "\n", self._style("muted"))


def _load_words(load: LoadColumn) -> str:
    """`mlx-lm load: 7.04 GiB free` (or `over`)."""
    v = load.verdict
    return f"{load.heading}: {format_bytes_short(v.bytes)} {'free' if v.fits else 'over'}"


@lru_cache(maxsize=256)
def _wrap_cached(text: str, width: int) -> tuple[str, ...]:
    return tuple(textwrap.wrap(text, width))


def _wrap(text: str, width: int) -> list[str]:
    """`textwrap.wrap`, kept for the words a key leaves as they were (most notes): the
    wrap was a tenth of the breakdown's work on a token key."""
    return list(_wrap_cached(text, width))


def _wrapped(text: str, width: int, style: Style) -> list[Text]:
    """Text wrapped at word boundaries to `width`, a Text per line."""
    return [_styled(line, style) for line in _wrap(text, max(width, 20)) or [""]]


_GGUF_STYLES = {"kv": "kv", "compute": "activation", "output": "overhead", "projector": "inflight"}
"""A llama.cpp term's colour, by its kind's word (the weights' otherwise)."""


def _styled(text: str, style: Style) -> Text:
    # A span, not the Text's base style: `Text.render` drops the base style.
    return Text().append(text, style)


def _fit(note: str, width: int, wrap: bool) -> list[str]:
    """A note cut to the column (with an ellipsis), or wrapped when there is room to."""
    if len(note) <= width:
        return [note]
    if wrap:
        return _wrap(note, width) or [""]
    return [note[: max(0, width - 1)] + "…"]
