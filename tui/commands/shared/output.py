"""What the commands write besides their result: warnings, the measuring progress line,
a failed measurement's line."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from core.display_text import clean_text
from core.measurement.protocol import MeasureEvent, MeasureNotice, MeasureProgress
from core.measurement.result import MeasurementFailure

EXIT_FAILED = 1
"""The exit status of a measurement that failed (2 is a usage error)."""


def note(lines: Sequence[str]) -> None:
    """Print note lines (not faults: where an answer came from) to stderr."""
    for line in lines:
        print(f"vramscope: note: {clean_text(line)}", file=sys.stderr)


def warn(lines: Sequence[str]) -> None:
    """Print warning lines to stderr, one line each."""
    for line in lines:
        print(f"vramscope: warning: {clean_text(line)}", file=sys.stderr)


class ProgressLine:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    WIDTH = 24

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._shown = False

    def __call__(self, event: MeasureEvent) -> None:
        if isinstance(event, MeasureNotice):
            self.clear()
            print(f"vramscope: {clean_text(event.message)}", file=sys.stderr)
        elif isinstance(event, MeasureProgress) and self.enabled:
            filled = round(event.fraction * self.WIDTH)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            text = f"\r[{bar}] {event.phase} {event.done}/{event.total}"
            sys.stderr.write(f"{text:<72}")
            sys.stderr.flush()
            self._shown = True

    def clear(self) -> None:
        """Erase the bar before other output."""
        if self._shown:
            sys.stderr.write("\r" + " " * 72 + "\r")
            sys.stderr.flush()
            self._shown = False


def failure_line(failure: MeasurementFailure) -> str:
    """`vramscope: error: measurement failed (out of memory): ...`."""
    return clean_text(
        f"vramscope: error: measurement failed ({failure.kind.label}): {failure.message}"
    )
