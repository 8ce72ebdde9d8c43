"""Every measured peak, kept in a JSON-lines file in the user's state directory.

`$XDG_STATE_HOME/vramscope/measurements.jsonl` (default `~/.local/state/...`).
Each record is one line written with a single `write` on a file opened for
appending, under an exclusive lock, then flushed to disk. A crash mid-write can
at worst leave a partial last line: the next append starts on a fresh line so
that fragment stays on its own, and the reader skips any line that does not
decode (or that a newer vramscope wrote), with a warning naming its line number.
A `vramscope run` whose command ended before anything of it was read is a
`"kind": "not_measured"` line (`UnmeasuredRun`: its peak null, "not measured"), read
apart from the peaks (`HistoryRead.unmeasured`), so nothing fits or covers it (a
vramscope from before skips it with a warning). Earlier records are never rewritten;
something other than a regular file in its place (a FIFO, a folder) is kept aside
under a dated name (`core/kept_aside.py`) before a new history is started, and
`append` returns the line saying where. Standard library
only.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import describe_os_error
from core.kept_aside import kept_aside_line, set_aside
from core.measurement.result import MeasuredPeak, UnmeasuredRun, checked_peak
from core.paths import state_dir
from core.regular_file import check_regular_fd, read_regular

HISTORY_FILE = "measurements.jsonl"
SCHEMA_VERSION = 1
HISTORY_SIZE_CAP = 256 * 1024 * 1024
"""The most of the history read (a run's record is under 2 KB: 100,000 runs in 200 MB)."""


_NOT_REGULAR = (errno.EINVAL, errno.EISDIR, errno.ENXIO)
"""What opening something other than a regular file for appending fails with."""


@dataclass(frozen=True)
class HistoryRead:
    """The records that decoded, and one warning per line that did not."""

    results: list[MeasuredPeak] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unmeasured: list[UnmeasuredRun] = field(default_factory=list)
    """The runs recorded as "not measured" (no peak), in the file's order."""
    unreadable: str | None = None
    """Why the history could not be read at all (None: read, or there is none yet)."""


@contextmanager
def _locked(fd: int) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # not POSIX: appends are still single writes
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


MEASUREMENT = "measurement"
NOT_MEASURED = "not_measured"
"""The two record tags: a measured peak, a run recorded as "not measured"."""


def encode_record(peak: MeasuredPeak | UnmeasuredRun) -> bytes:
    """One history line (with its newline)."""
    tag = NOT_MEASURED if isinstance(peak, UnmeasuredRun) else MEASUREMENT
    record = {"schema": SCHEMA_VERSION, "kind": tag, "result": peak.to_dict()}
    return (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def decode_any(line: bytes) -> MeasuredPeak | UnmeasuredRun:
    """The peak, or the not-measured run, of one line (ValueError, KeyError or
    TypeError when damaged)."""
    data: Any = json.loads(line.decode("utf-8"))
    tag = data.get("kind") if isinstance(data, dict) else None
    if tag not in (MEASUREMENT, NOT_MEASURED):
        raise ValueError("not a measurement record")
    if data.get("schema", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise ValueError(
            f"schema {data.get('schema')!r}, this vramscope reads {SCHEMA_VERSION}: "
            "written by another version"
        )
    result = data["result"]
    if not isinstance(result, dict):
        raise TypeError("result is not an object")
    return UnmeasuredRun.from_dict(result) if tag == NOT_MEASURED else checked_peak(result)


def decode_record(line: bytes) -> MeasuredPeak:
    """The peak of one line (ValueError, KeyError or TypeError when damaged, or when
    the line is a run recorded as not measured)."""
    found = decode_any(line)
    if isinstance(found, UnmeasuredRun):
        raise ValueError("a run recorded as not measured, not a peak")
    return found


class HistoryStore:
    """Append-only JSON-lines store of measured peaks."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def default(cls) -> HistoryStore:
        """The store in the user's state directory."""
        return cls(state_dir() / HISTORY_FILE)

    def append(self, peak: MeasuredPeak | UnmeasuredRun) -> str | None:
        """Add one record durably; earlier records are never touched. Returns the line
        saying where a non-regular file in the history's place was kept, else None."""
        data = encode_record(peak)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kept: str | None = None
        try:
            fd = self._open_regular()
        except OSError as exc:
            if not os.path.lexists(self.path) or exc.errno not in _NOT_REGULAR:
                raise
            aside = set_aside(self.path)
            kept = kept_aside_line(self.path, aside, describe_os_error(exc))
            fd = self._open_regular()
        try:
            with _locked(fd):
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # a torn last line stays a line of its own
                written = 0
                while written < len(data):
                    written += os.write(fd, data[written:])
                os.fsync(fd)
        finally:
            os.close(fd)
        return kept

    def _open_regular(self) -> int:
        # Non-blocking, then checked: a FIFO in its place would block the write.
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
        try:
            check_regular_fd(fd, self.path)
        except OSError:
            os.close(fd)
            raise
        return fd

    def read(self) -> HistoryRead:
        """Every record in order; damaged lines are skipped with a warning each."""
        out = HistoryRead()
        try:
            raw = read_regular(self.path, HISTORY_SIZE_CAP)
        except FileNotFoundError:
            return out
        except OSError as exc:
            reason = describe_os_error(exc) or type(exc).__name__
            said = f"{self.path}: cannot read the history ({reason})"
            return HistoryRead(warnings=[said], unreadable=reason)
        if len(raw) > HISTORY_SIZE_CAP:
            out.warnings.append(
                f"{self.path}: over {HISTORY_SIZE_CAP:,} bytes; read the first "
                f"{HISTORY_SIZE_CAP:,} (a run's record is under 2 KB)"
            )
            raw = raw[:HISTORY_SIZE_CAP]
        for number, line in enumerate(raw.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                found = decode_any(line)
            except (ValueError, KeyError, TypeError, RecursionError) as exc:
                out.warnings.append(f"{self.path}:{number}: skipped a damaged record ({exc})")
                continue
            if isinstance(found, UnmeasuredRun):
                out.unmeasured.append(found)
            else:
                out.results.append(found)
        return out
