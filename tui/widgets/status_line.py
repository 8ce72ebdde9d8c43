"""The top line: which backend (detected or chosen), where available memory comes from."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class StatusLine(Static):
    """`vramscope │ ROCm · detected (...) │ 76.80 GiB available · (source)`.

    When the whole line does not fit, the backend's reason is dropped first, so the
    available memory and its source stay readable on an 80-column terminal.
    """

    DEFAULT_CSS = """
    StatusLine {
        dock: top;
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__("", id=id, markup=False)
        self._words: tuple[str, str, str] = ("", "", "")
        self._shown: tuple[str, int] | None = None

    def show(self, backend: str, backend_short: str, available: str) -> None:
        """Show the backend (long and short forms) and the available-memory words."""
        self._words = (backend, backend_short, available)
        self._paint()

    def on_resize(self) -> None:
        self._paint()

    def _paint(self) -> None:
        backend, short, available = self._words
        width = self.content_region.width
        line = f"vramscope  │  {backend}  │  {available}"
        if width and len(line) > width:
            backend = short
        if self._shown == (backend + available, width):
            return
        self._shown = (backend + available, width)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("vramscope", "bold")
        text.append("  │  ", "dim")
        text.append(backend)
        text.append("  │  ", "dim")
        text.append(available)
        self.update(text, layout=False)
