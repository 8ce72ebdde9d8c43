"""Reading a file vramscope did not write: only a regular file, never blocking.

A FIFO, a character device or a socket where a file is expected would hang a plain
`open` (a FIFO with no writer) or never end (`/dev/zero`). The file is opened
non-blocking and checked with `fstat` on the open descriptor (no window between a
check and the open), then read up to a cap.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from io import BufferedReader, FileIO
from pathlib import Path


def open_regular(path: Path) -> BufferedReader:
    """`path` opened for reading as a binary file, checked regular on the open descriptor
    first (OSError "is not a regular file" otherwise): every reader of a file vramscope
    did not write opens it here or through `read_regular`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        check_regular_fd(fd, path)
        # Blocking again: a regular file never blocks, and buffered reads expect it.
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        raw = FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    return BufferedReader(raw)


def read_regular(path: Path, cap: int) -> bytes:
    """At most `cap + 1` bytes of a regular file (the caller decides what more than
    `cap` means); OSError "is not a regular file" for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        check_regular_fd(fd, path)
        chunks: list[bytes] = []
        left = cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_small_text(path: Path, cap: int) -> str:
    """A small text file of the machine's (sysfs, procfs), ASCII with replacements:
    OSError when it is not a regular file, cannot be read or holds more than `cap`
    bytes (a sysfs value is a few bytes; more is not one)."""
    data = read_regular(path, cap)
    if len(data) > cap:
        raise OSError(errno.EFBIG, f"holds more than {cap:,} bytes", str(path))
    return data.decode("ascii", "replace")


def check_regular_fd(fd: int, path: Path) -> None:
    """OSError naming `path` unless the open descriptor is a regular file."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        raise OSError(errno.EISDIR, "is a directory", str(path))
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "is not a regular file", str(path))
