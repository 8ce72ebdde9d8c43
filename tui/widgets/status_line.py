"""The top lines: which backend (detected or chosen) and where available memory comes from;
then the summary (model, total, verdict) that stays in view at every size."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from core.answer.device import BackendBasis, Device
from core.backend import Backend, BackendChoice
from core.display_text import clean_text
from core.units import format_bytes_short
from tui.model.names import fit_name
from tui.model.views import Summary
from tui.widgets.repaint import OneLine


class StatusLine(OneLine):
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
        & > .status--alert { color: $error; text-style: bold; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"status--alert"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._words: tuple[str, str, str] = ("", "", "")
        self._alert = ""
        """A model that could not be read while another stayed on screen ("" = none)."""

    def show_alert(self, text: str) -> None:
        """Say in place of the available memory's words why a model could not be read
        ("" clears it; the next model read does)."""
        text = clean_text(text)
        if text != self._alert:
            self._alert = text
            self.refresh()

    def show_device(self, device: Device | None, machine: BackendChoice, wait: str) -> None:
        """The device the screen answers for: its backend and why (as `inspect` says it),
        and the available memory's source; `wait` while it is not known yet."""
        if device is None:
            self.show("…", "…", wait)
            return
        label = device.backend.label
        reason = device.backend_reason
        if device.basis is BackendBasis.ASKED and machine.backend is not device.backend:
            here = "no GPU found" if machine.backend is Backend.CPU else machine.backend.label
            reason = f"chosen (this machine: {here})"
        short = device.basis.value if device.basis is not BackendBasis.ASKED else "chosen"
        available = (
            f"{format_bytes_short(device.available.bytes)} available · {device.available.source}"
        )
        self.show(f"{label} · {reason}", f"{label} · {short}", available)

    def show(self, backend: str, backend_short: str, available: str) -> None:
        """Show the backend (long and short forms) and the available-memory words."""
        words = (backend, backend_short, available)
        if words != self._words:
            self._words = words
            self.refresh()  # `render_line` draws it again: its key changed

    def line_key(self) -> object:
        return (self._words, self._alert)

    def line(self, width: int) -> Text:
        backend, short, available = self._words
        line = f"vramscope  │  {backend}  │  {available}"
        if width and len(line) > width:
            backend = short
        text = Text()
        text.append("vramscope", "bold")
        text.append("  │  ", "dim")
        if self._alert:
            text.append(f"⚠ {self._alert}", self.kept.component("status--alert"))
            return text
        text.append(backend)
        text.append("  │  ", "dim")
        text.append(available)
        return text


class SummaryLine(OneLine):
    """The answer in one line at every size: the verdict, the total and the model.

    ` FITS  8K · 7.28 GiB of 76.80 GiB · …/Meta-Llama-3.1-8B-Instruct-4bit`; a
    measurement in flight adds its progress. When the line is short the detail gets
    shorter and the model's org is cut before its own name, so the verdict and total stay.
    """

    DEFAULT_CSS = """
    SummaryLine {
        height: 1;
        padding: 0 1;
        background: $boost;
        & > .summary--fits { background: $success; color: $background; text-style: bold; }
        & > .summary--over { background: $error; color: $background; text-style: bold; }
        & > .summary--busy { color: $accent; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"summary--fits", "summary--over", "summary--busy"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.summary: Summary | None = None

    def show(self, summary: Summary) -> None:
        """Show a summary."""
        if summary != self.summary:
            self.summary = summary
            self.refresh()  # `render_line` draws it again: its key changed

    def line_key(self) -> object:
        return self.summary

    def line(self, width: int) -> Text:
        """The verdict first, then the total, then the model (cut to what is left)."""
        s = self.summary
        if s is None:
            return Text("")
        badge = f" {s.verdict} " if s.verdict else ""
        activity = f" · {s.activity}" if s.activity else ""
        lead = len(badge) + 1 if badge else 0
        # The longest detail that leaves the model's own name whole: the full words, then
        # `8K · 7.28 GiB of 76.80 GiB`, then `8K · 7.28 GiB` (the top line names the
        # available memory); the shortest one when none does.
        own = min(len(s.name), len(s.name.partition("/")[2] or s.name) + 2)
        details = [d for d in (s.detail, s.short, s.tiny) if d]
        detail = next(
            (d for d in details if lead + len(d) + 3 + own + len(activity) <= width),
            details[-1],
        )
        room = max(12, width - lead - len(detail) - 3 - len(activity))
        # Untrusted (a folder's name): cleaned, then the org goes first, the own name stays.
        name = fit_name(clean_text(s.name), room)
        text = Text(no_wrap=True, overflow="ellipsis")
        if badge:
            style = "summary--fits" if s.fits else "summary--over"
            text.append(badge, self.kept.component(style)).append(" ")
        text.append(detail).append(" · ").append(name, "bold")
        if activity:
            text.append(activity, self.kept.component("summary--busy"))
        return text
