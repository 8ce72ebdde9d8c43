"""The command lines that reproduce the screen, ready to copy."""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip

from tui.widgets.repaint import KeptStyles, SeenLines, line_strip

LONG_WORD = 40
"""Folder paths longer than this are shown shortened; copying gives them whole."""


def shown(command: str) -> str:
    """The command with each over-long folder path cut in the middle, so a long path can
    never push the flags after it out of the panel (`c`/`C` copy the full line). Repo
    ids (`org/name`, one slash) are always shown whole."""
    return " ".join(
        f"{w[:14]}…{w[-(LONG_WORD - 15) :]}" if len(w) > LONG_WORD and w.count("/") > 1 else w
        for w in command.split(" ")
    )


class CommandLinesView(SeenLines):
    """`vramscope inspect ...` and `mlxcel inspect ...`, one per paragraph.

    Drawn through the line API (a token key changes both lines: as a Static, the
    Rich-to-Content conversion and its wrap cost 1.3 ms a key), wrapped by Rich once
    per text and width.
    """

    DEFAULT_CSS = """
    CommandLinesView {
        height: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.vramscope = ""
        self.mlxcel = ""
        self._kept = KeptStyles(self)
        self._wrapped: tuple[int, list[Strip]] | None = None
        """The lines drawn for a width (None: to draw again)."""
        self._drawn: dict[object, Strip] = {}
        """The last lines drawn, by their words and styles."""
        self.border_title = "Same estimate on the command line (c, C copy)"

    def show(self, vramscope: str, mlxcel: str) -> None:
        """Show both lines: a relayout only when the wrapped height changes, else a
        repaint of the lines that changed (a token key changes one or two of eight)."""
        if (vramscope, mlxcel) == (self.vramscope, self.mlxcel):
            return
        # Hidden in this layout (the screen shows one of its two panels): the next
        # layout pass sizes it. Asked first: a hidden widget's size is a search.
        width = self.size.width if self.display else 0
        before = self._lines(width) if width else []
        self.vramscope, self.mlxcel = vramscope, mlxcel
        self._wrapped = None
        if not width:
            self._unseen_change = True  # drawn afresh once shown
            return
        lines = self._lines(width)
        if len(lines) != len(before):
            self.refresh(layout=True)
            return
        changed = [y for y, (old, new) in enumerate(zip(before, lines, strict=True)) if old != new]
        if changed:
            self.repaint(*(Region(0, y, width, 1) for y in changed))

    def notify_style_update(self) -> None:
        self._kept.clear()
        self._wrapped, self._drawn = None, {}  # they carry the old styles
        super().notify_style_update()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width))

    def render_line(self, y: int) -> Strip:
        base = self._kept.base()
        width = self.size.width
        lines = self._lines(width)
        if y < len(lines):
            return lines[y].adjust_cell_length(width, base)
        return Strip.blank(width, base)

    def _lines(self, width: int) -> list[Strip]:
        if self._wrapped is None or self._wrapped[0] != width:
            text = Text()
            text.append("$ ", "dim")
            text.append(shown(self.vramscope))
            text.append("\n$ ", "dim")
            text.append(shown(self.mlxcel))
            console, base = self.app.console, self._kept.base()
            # A line whose words and styles stayed keeps its strip: a token key changes
            # one or two lines of eight.
            before: dict[object, Strip] = self._drawn
            drawn: dict[object, Strip] = {}
            strips = []
            for line in text.wrap(console, max(width, 1)):
                key, strip = line_strip(line, before, console, base)
                drawn[key] = strip
                strips.append(strip)
            self._wrapped, self._drawn = (width, strips), drawn
        return self._wrapped[1]
