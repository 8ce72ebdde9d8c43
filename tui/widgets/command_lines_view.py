"""The command lines that reproduce the screen, ready to copy."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


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

    def show(self, vramscope: str, mlxcel: str) -> None:
        """Show both lines."""
        self.vramscope, self.mlxcel = vramscope, mlxcel
        text = Text()
        text.append("$ ", "dim")
        text.append(vramscope)
        text.append("\n$ ", "dim")
        text.append(mlxcel)
        self.update(text)
