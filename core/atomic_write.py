"""Replacing a file whole: a reader sees the old bytes or the new ones, never half.

The bytes go to a temporary file in the same folder (so the rename stays on one file
system), are flushed to disk, then `os.replace` puts them in place. On any failure the
temporary file is removed and the old file is left as it was.

A read-merge-write (the calibrations, a listing, the catalog cache, a Hub snapshot)
holds `locked(path)` from the read to the replace: an `fcntl.flock` on `PATH.lock`
beside the file, so two vramscope processes never merge into the same old bytes and
lose one another's part. The lock file stays (removing it would race a waiter).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

LOCK_WAIT_S = 30.0
"""How long a writer waits for another to finish before it gives up (OSError)."""
_LOCK_POLL_S = 0.01


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


def lock_path(path: Path) -> Path:
    """The lock file beside `path`: `calibration.json.lock`."""
    return path.with_name(path.name + ".lock")


@contextmanager
def locked(path: Path, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold the exclusive lock of `path` for the block (a read-merge-write of it).

    OSError when the lock file cannot be made or opened as a regular file, or when
    another process holds the lock past `wait_s` (never a wait without end).
    """
    where = lock_path(path)
    where.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(where, flags, 0o600)
    try:
        if not _is_regular(fd):
            raise OSError(errno.EINVAL, "the lock file is not a regular file", str(where))
        end = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= end:
                    raise OSError(
                        errno.EWOULDBLOCK,
                        f"another process has held the lock for {wait_s:g} s",
                        str(where),
                    ) from None
                time.sleep(_LOCK_POLL_S)
        yield
    finally:
        os.close(fd)  # closing the one descriptor releases the lock


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)
