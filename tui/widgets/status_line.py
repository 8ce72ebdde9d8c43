"""The top line: which backend (detected or chosen), where available memory comes from."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class StatusLine(Static):
    """`vramscope │ ROCm (detected: ...) │ available 76.80 GiB (...)`."""

    DEFAULT_CSS = """
    StatusLine {
        dock: top;
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    def show(self, backend: str, available: str) -> None:
        """Show the backend and available-memory words."""
        if (backend, available) == getattr(self, "_shown", None):
            return
        self._shown = (backend, available)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("vramscope", "bold")
        text.append("  │  ", "dim")
        text.append(backend)
        text.append("  │  ", "dim")
        text.append(available)
        self.update(text, layout=False)
