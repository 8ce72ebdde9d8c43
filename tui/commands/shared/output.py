"""What the commands write besides their result: notes, warnings, a failed
measurement's line, and the exit statuses."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from core.display_text import clean_text
from core.measurement.result import MeasurementFailure

EXIT_FAILED = 1
"""The exit status of a `--check` verdict that failed (the estimate does not fit or
does not cover the peak)."""
EXIT_ERROR = 2
"""The exit status of an error: bad input, and a measurement that failed (the README's
promise: a one-line error and exit 2)."""


def note(lines: Sequence[str]) -> None:
    """Print note lines (not faults: where an answer came from) to stderr."""
    for line in lines:
        print(f"vramscope: note: {clean_text(line)}", file=sys.stderr)


def warn(lines: Sequence[str]) -> None:
    """Print warning lines to stderr, one line each."""
    for line in lines:
        print(f"vramscope: warning: {clean_text(line)}", file=sys.stderr)


def failure_line(failure: MeasurementFailure) -> str:
    """`vramscope: error: measurement failed (out of memory): ...`."""
    return clean_text(
        f"vramscope: error: measurement failed ({failure.kind.label}): {failure.message}"
    )
