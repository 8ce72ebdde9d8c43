"""The command lines that reproduce the screen, ready to copy."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.widgets.repaint import force_relayout

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


class CommandLinesView(Static):
    """`vramscope inspect ...` and `mlxcel inspect ...`, one per paragraph."""

    DEFAULT_CSS = """
    CommandLinesView {
        height: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__("", id=id, markup=False)
        self.vramscope = ""
        self.mlxcel = ""
        self._lines = -1
        self.border_title = "Same estimate on the command line (c, C copy)"

    def show(self, vramscope: str, mlxcel: str) -> None:
        """Show both lines (a relayout only when the wrapped height changes)."""
        if (vramscope, mlxcel) == (self.vramscope, self.mlxcel):
            return
        self.vramscope, self.mlxcel = vramscope, mlxcel
        self._paint()

    def _paint(self) -> None:
        text = Text()
        text.append("$ ", "dim")
        text.append(shown(self.vramscope))
        text.append("\n$ ", "dim")
        text.append(shown(self.mlxcel))
        width = self.content_region.width
        if not width:  # hidden in this layout: the next layout pass sizes it
            self.update(text, layout=False)
            return
        lines = len(text.wrap(self.app.console, width))
        self.update(text, layout=False)
        if lines != self._lines:
            force_relayout(self)
        self._lines = lines

    def on_resize(self) -> None:
        self._lines = -1
        self._paint()
