"""A stored file vramscope cannot read is kept, never replaced.

The history, the calibrations and the caches are read, checked, then written whole
(`core/atomic_write.py`) or appended to. When the file in place cannot be read (written
by a newer vramscope, truncated, damaged, a FIFO, too large), writing over it would
destroy what another version, another device or the user put there: it is renamed
beside itself under a dated name first, and the caller tells the user where (one line,
`kept_aside_line`). When it cannot be renamed, nothing is written.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from core.display_text import clean_text

MARK = "unreadable"


def aside_name(path: Path, stamp: str, n: int = 0) -> Path:
    """`calibration.json.unreadable-20261203T060000Z` (then `-2`, `-3`, ... if taken)."""
    suffix = f"-{n}" if n > 1 else ""
    return path.with_name(f"{path.name}.{MARK}-{stamp}{suffix}")


def set_aside(path: Path) -> Path:
    """Rename `path` (any kind of file) to a dated name no file has yet, and return it
    (OSError when it cannot be renamed; then the caller must not write `path`)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1, 1000):
        target = aside_name(path, stamp, n)
        if os.path.lexists(target):
            continue
        os.rename(path, target)
        return target
    raise FileExistsError(17, "no free name to keep it under", str(path))


def kept_aside_line(path: Path, aside: Path, why: str) -> str:
    """The one line saying what was kept and where."""
    return clean_text(
        f"{path}: could not be read ({why}); kept it as {aside} and started a new file"
    )
