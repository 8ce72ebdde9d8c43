"""Replacing a file whole: a reader sees the old bytes or the new ones, never half.

The bytes go to a temporary file in the same folder (so the rename stays on one file
system), are flushed to disk, then `os.replace` puts them in place. On any failure the
temporary file is removed and the old file is left as it was.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import suppress
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` (OSError when the folder cannot be written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
