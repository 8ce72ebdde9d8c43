"""What the commands write besides their result: notes, warnings, a failed
measurement's line, and the exit statuses."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.atomic_write import atomic_write
from core.display_text import clean_text
from core.errors import UsageError

if TYPE_CHECKING:  # the measurement's types: `inspect` and `fit` never import them
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


def check_out_path(flag: str, path: Path) -> None:
    """Refuse, before any work, a file the command could not write its result to: a
    folder, a FIFO or device (writing would block or vanish), a missing or read-only
    folder. UsageError naming `flag` and why."""
    shown = clean_text(str(path))
    if not path.parent.is_dir():
        raise UsageError(flag, f"cannot write {shown}: no such folder")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise UsageError(flag, f"cannot write {shown}: {exc.strerror or exc}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(flag, f"cannot write {shown}: is a directory; name a file in it")
    if mode is not None and not stat.S_ISREG(mode):
        raise UsageError(flag, f"cannot write {shown}: not a regular file")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise UsageError(flag, f"cannot write {shown}: the folder is not writable")


def write_out(flag: str, path: Path, data: bytes) -> None:
    """Write a result file whole (`core.atomic_write`): UsageError naming `flag` if not."""
    try:
        atomic_write(path, data)
    except OSError as exc:
        shown = clean_text(str(path))
        raise UsageError(flag, f"cannot write {shown}: {exc.strerror or exc}") from None
