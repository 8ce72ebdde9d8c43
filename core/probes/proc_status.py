"""Processes and their resident memory: `/proc/PID/status` (`PPid`, `VmRSS`, `VmHWM`).

`VmHWM` is the process's own high-water mark of resident memory (the kernel keeps it
per process, from its start); `VmRSS` is what it holds now. A process tree is found
from every process's `PPid`. A process's state (`/proc/PID/stat`: stopped, zombie) and
one variable of its environment as it was at its exec (`/proc/PID/environ`: the token
`vramscope run` hands its command) are read for `run`. The root is injectable so that
tests read recorded trees.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

STATUS_CAP = 64 * 1024
"""The most of one status file read (a few KiB)."""


@dataclass(frozen=True)
class ProcStatus:
    """One process's line of descent and resident memory, in bytes."""

    pid: int
    ppid: int
    rss_bytes: int
    hwm_bytes: int


def _kib(value: str) -> int:
    number = value.split()[0] if value.split() else ""
    return int(number) * 1024 if number.isdigit() else 0


def parse_status(pid: int, text: str) -> ProcStatus | None:
    """The fields of a status file's text (None without `PPid`)."""
    keys: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            keys[key] = value.strip()
    ppid = keys.get("PPid", "")
    if not ppid.isdigit():
        return None
    # A kernel thread or a zombie has no Vm lines: it holds no memory of its own.
    return ProcStatus(pid, int(ppid), _kib(keys.get("VmRSS", "")), _kib(keys.get("VmHWM", "")))


def read_status(pid: int, root: Path = Path("/")) -> ProcStatus | None:
    """Process `pid`'s status, or None (gone, or unreadable)."""
    data = _read_proc_file(pid, "status", STATUS_CAP, root)
    return None if data is None else parse_status(pid, data.decode("utf-8", "replace"))


CMDLINE_CAP = 64 * 1024
"""The most of one command line read (enough to tell two apart)."""


def read_cmdline(pid: int, root: Path = Path("/")) -> bytes | None:
    """Process `pid`'s command line as the kernel keeps it (NUL-separated), or None."""
    return _read_proc_file(pid, "cmdline", CMDLINE_CAP, root)


def _read_proc_file(pid: int, name: str, cap: int, root: Path) -> bytes | None:
    """Up to `cap` bytes of `/proc/PID/NAME` in one read, or None (gone, or unreadable)."""
    try:
        fd = os.open(root / "proc" / str(pid) / name, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(fd, cap)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_all(root: Path = Path("/")) -> dict[int, ProcStatus]:
    """Every process's status that could be read, by pid."""
    try:
        names = os.listdir(root / "proc")
    except OSError:
        return {}
    out = {}
    for name in names:
        if name.isdigit():
            status = read_status(int(name), root)
            if status is not None:
                out[status.pid] = status
    return out


def descendants(statuses: dict[int, ProcStatus], pid: int) -> list[int]:
    """The pids below `pid` (children, their children, ...), not `pid` itself."""
    children: dict[int, list[int]] = {}
    for status in statuses.values():
        children.setdefault(status.ppid, []).append(status.pid)
    out: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        if child in out:  # a reused pid cannot make a loop, but never spin on one
            continue
        out.append(child)
        todo.extend(children.get(child, []))
    return out


ENVIRON_CAP = 1 << 20
"""The most of one environment read (a marker set by vramscope is near its start)."""


def read_environ(pid: int, root: Path = Path("/")) -> bytes | None:
    """Process `pid`'s environment as it was at its exec (`NAME=value` entries, NUL
    separated), or None: gone, or not ours to read."""
    return _read_proc_file(pid, "environ", ENVIRON_CAP, root)


def read_state(pid: int, root: Path = Path("/")) -> str | None:
    """Process `pid`'s state letter from `/proc/PID/stat` (`R`, `S`, `T` stopped, `t`
    traced, `Z` zombie...), or None when it is gone."""
    data = _read_proc_file(pid, "stat", STATUS_CAP, root)
    if data is None:
        return None
    fields = data.rsplit(b")", 1)[-1].split()
    return fields[0].decode("ascii", "replace") if fields else None
