"""A small on-disk cache of catalog entries, so a new process lists 500 repos quickly.

`$XDG_CACHE_HOME/vramscope/catalog.json` (default `~/.cache/vramscope/`) maps each
model folder to the entry built from it and the identity of the files it was built
from (path, device, inode, size, mtime_ns, blocks of config.json, the index and
every `*.safetensors`). An entry is used only when that identity is unchanged, and
only by the same vramscope code: the file records a fingerprint of `core/`'s
sources, and a different one starts an empty cache.

Writes go to a temporary file in the same folder, then `os.replace`: a reader sees
the old file or the new one, never half of one. A save holds the file's lock
(`core.atomic_write.locked`), reads the file again and writes it with this process's
new entries merged in, so concurrent writers keep one another's entries. A file of
another build (its fingerprint) is simply replaced: the cache only ever saves time. A
file that cannot be read at all (not JSON, not a regular file, too large) is not
written over: it is kept aside under a dated name first (`core/kept_aside.py`), and
`kept` holds the line saying where.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any

from core.atomic_write import atomic_write, locked
from core.catalog.entry import CatalogEntry, EntryOrigin
from core.errors import describe_os_error
from core.estimate.kv_cache import KvKind
from core.estimate.weights import WeightsSource
from core.kept_aside import kept_aside_line, set_aside
from core.paths import cache_dir
from core.regular_file import read_regular

CACHE_FILE = "catalog.json"
CACHE_SIZE_CAP = 64 * 1024 * 1024
_FORMAT = 1


@cache
def code_fingerprint() -> str:
    """Names, sizes and mtimes of every `core/**/*.py` and the entry's fields: a new
    build of the estimator (or a changed entry type) never reads another build's entries."""
    here = Path(__file__).resolve().parents[1]
    parts = [f"format {_FORMAT}", ",".join(f.name for f in dataclasses.fields(CatalogEntry))]
    for path in sorted(here.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        parts.append(f"{path.relative_to(here)}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def entry_to_json(entry: CatalogEntry) -> dict[str, Any]:
    """A CatalogEntry as plain JSON values."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(entry):
        value = getattr(entry, f.name)
        if isinstance(value, enum.Enum):
            value = value.name
        elif isinstance(value, Path):
            value = os.fsdecode(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def entry_from_json(data: Any) -> CatalogEntry | None:
    """The inverse of `entry_to_json`, or None for anything that does not fit."""
    if not isinstance(data, dict):
        return None
    try:
        values = dict(data)
        values["weights_source"] = WeightsSource[values["weights_source"]]
        values["origin"] = EntryOrigin[values["origin"]]
        kind = values["kv_kind"]
        values["kv_kind"] = None if kind is None else KvKind[kind]
        values["path"] = None if values["path"] is None else Path(values["path"])
        values["refs"] = tuple(values["refs"])
        values["warnings"] = tuple(values["warnings"])
        return CatalogEntry(**values)
    except (KeyError, TypeError, ValueError):
        return None


def _jsonable(value: Any) -> Any:
    """Tuples as lists, so an identity compares equal after a JSON round trip."""
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value


class CatalogCache:
    """Entries by folder key, valid while the files they came from are unchanged."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, Any] = {}
        self._new: dict[str, Any] = {}
        """The entries this process put: merged into the file as it is when saved."""
        self._dirty = False
        self._problem: str | None = None
        self.kept: str | None = None
        """The line saying where an unreadable cache file was kept aside, once saved."""
        if path is not None:
            self._entries = self._load(path)

    def _load(self, path: Path) -> dict[str, Any]:
        try:
            raw = read_regular(path, CACHE_SIZE_CAP)
            if not raw.strip():
                return {}  # nothing in it to keep
            if len(raw) > CACHE_SIZE_CAP:
                raise ValueError(f"over {CACHE_SIZE_CAP:,} bytes")
            data = json.loads(raw)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, RecursionError, MemoryError) as exc:
            why = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)[:200]
            self._problem = why or type(exc).__name__
            return {}  # start over; the file is kept aside before it is written over
        if (
            not isinstance(data, dict)
            or data.get("fingerprint") != code_fingerprint()
            or not isinstance(data.get("entries"), dict)
        ):
            return {}
        entries: dict[str, Any] = data["entries"]
        return entries

    def get(self, key: str, identity: object) -> CatalogEntry | None:
        """The entry stored for `key` when its identity matches."""
        return entry_from_json(self.get_json(key, identity))

    def put(self, key: str, identity: object, entry: CatalogEntry) -> None:
        """Remember an entry (written by `save`)."""
        self.put_json(key, identity, entry_to_json(entry))

    def get_json(self, key: str, identity: object) -> Any:
        """Any JSON value stored for `key` with that identity, else None."""
        item = self._entries.get(key)
        if not isinstance(item, dict) or item.get("identity") != _jsonable(identity):
            return None
        return item.get("entry")

    def put_json(self, key: str, identity: object, value: Any) -> None:
        """Remember a JSON value under `key` (written by `save`)."""
        self._entries[key] = self._new[key] = {"identity": _jsonable(identity), "entry": value}
        self._dirty = True

    def save(self) -> None:
        """Write the cache atomically when something changed; errors are ignored."""
        if self.path is None or not self._dirty:
            return
        try:
            with locked(self.path):  # read-merge-write: another process's entries kept
                self._entries = {**self._load(self.path), **self._new}
                doc = {"fingerprint": code_fingerprint(), "entries": self._entries}
                data = json.dumps(doc, separators=(",", ":")).encode("utf-8", "surrogateescape")
                if self._problem is not None and os.path.lexists(self.path):
                    aside = set_aside(self.path)  # OSError: then nothing is written
                    self.kept = kept_aside_line(self.path, aside, self._problem)
                self._problem = None
                atomic_write(self.path, data)
        except (OSError, ValueError, TypeError):
            return
        self._dirty = False
        self._new = {}


ACTIVE: ContextVar[CatalogCache | None] = ContextVar("vramscope_catalog_cache", default=None)


@contextmanager
def catalog_cache(
    enabled: bool = True, directory: Path | None = None, notices: list[str] | None = None
) -> Iterator[None]:
    """Use the on-disk cache for catalog builds inside the block, then save it (and add
    to `notices` the line saying where an unreadable cache file was kept)."""
    if not enabled:
        yield
        return
    disk = CatalogCache((directory or cache_dir()) / CACHE_FILE)
    token = ACTIVE.set(disk)
    try:
        yield
    finally:
        ACTIVE.reset(token)
        disk.save()
        if disk.kept is not None and notices is not None:
            notices.append(disk.kept)
