"""The vramscope Hub store: header-only copies of repos read from the Hub.

Layout, keyed by repo and commit like the HF cache:
`hub/models--org--name/snapshots/<commit>/` holds `config.json` and
`model.safetensors.index.json` byte for byte and every `*.safetensors` as its
8-byte length plus header JSON (no data region), so `read_model_dir` on the
folder reads exactly what it would read from the real files.
`hub/models--org--name/refs/<revision>` holds the commit a revision pointed to
when it was read. A snapshot is written under a temporary name and renamed into
place, so a reader never sees half of one; its manifest
(`hub/models--org--name/manifests/<commit>.json`: each file's size and sha256)
is written first, so a copy damaged since (truncated, edited, emptied) is told
from a whole one and read again while the Hub is reachable.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from core.atomic_write import atomic_write
from core.paths import repo_folder_name
from core.regular_file import read_regular

COMMIT_RE = re.compile(r"[0-9a-f]{40}")
# Repo ids as the Hub allows them: `org/name`, letters, digits, `-_.`, no `--` or `..`.
REPO_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
REPO_ID_RULE = "org/name: letters, digits and -_., no -- or .., up to 96 each"
_REF_RE = re.compile(r"[A-Za-z0-9._/-]{1,200}")
_MANIFEST_CAP = 1 << 20
NO_MANIFEST = "no record of what was written (stored by an older vramscope)"
"""`verify`'s answer for a snapshot stored before manifests: trusted offline, read
again online."""


def is_repo_id(name: str) -> bool:
    """True when `name` is shaped like a Hub model id (`org/name`)."""
    return (
        REPO_ID_RE.fullmatch(name) is not None
        and "--" not in name
        and ".." not in name
        and not name.endswith(".")
    )


@dataclass(frozen=True)
class StoredModel:
    """One repo read from the Hub: its header-only snapshot folder."""

    repo_id: str
    commit: str
    path: Path
    refs: tuple[str, ...] = ()


def is_revision(revision: str) -> bool:
    """True for a branch, tag or commit name the Hub could have: `main`, `v1.0`,
    `refs/pr/2`. Never absolute, never `..`: it becomes a path under the store."""
    return (
        _REF_RE.fullmatch(revision) is not None
        and ".." not in revision
        and "//" not in revision
        and "/." not in revision
        and not revision.startswith(("/", "."))
        and not revision.endswith(("/", "."))
    )


def _ref_file(root: Path, repo_id: str, revision: str) -> Path | None:
    if not is_revision(revision):
        return None
    refs = root / repo_folder_name(repo_id) / "refs"
    ref = refs / revision
    # is_revision already rules out every escape; this says so where the path is made
    if os.path.commonpath([os.path.normpath(ref), os.path.normpath(refs)]) != os.path.normpath(
        refs
    ):
        return None
    return ref


def lookup(root: Path, repo_id: str, revision: str) -> StoredModel | None:
    """The stored snapshot for a revision (a commit, or a ref read before), or None."""
    commit: str | None = revision if COMMIT_RE.fullmatch(revision) else None
    if commit is None:
        ref = _ref_file(root, repo_id, revision)
        try:
            text = _read_ref(ref) if ref is not None else ""
        except (OSError, ValueError):
            return None
        commit = text if COMMIT_RE.fullmatch(text) else None
    if commit is None:
        return None
    path = root / repo_folder_name(repo_id) / "snapshots" / commit
    return StoredModel(repo_id, commit, path) if path.is_dir() else None


def header_only_bytes(header_json: bytes) -> bytes:
    """A safetensors file with no data region: the length prefix and the header."""
    return struct.pack("<Q", len(header_json)) + header_json


def _manifest(files: Mapping[str, bytes]) -> dict[str, list[object]]:
    return {name: [len(data), hashlib.sha256(data).hexdigest()] for name, data in files.items()}


def _manifest_file(path: Path) -> Path:
    """`<repo>/manifests/<commit>.json` for `<repo>/snapshots/<commit>`."""
    return path.parent.parent / "manifests" / f"{path.name}.json"


def verify(path: Path) -> str | None:
    """None when the snapshot holds exactly what was written, else what is wrong
    (NO_MANIFEST for a snapshot stored before manifests). Never raises."""
    try:
        recorded = json.loads(read_regular(_manifest_file(path), _MANIFEST_CAP))
    except FileNotFoundError:
        return NO_MANIFEST
    except (OSError, ValueError):
        return "its record of what was written is unreadable"
    if not isinstance(recorded, dict) or not recorded:
        return "its record of what was written is unreadable"
    try:
        present = sorted(p.name for p in path.iterdir())
    except OSError as exc:
        return f"cannot list it ({exc.strerror or type(exc).__name__})"
    if present != sorted(recorded):
        return "its files are not the ones written"
    for name, want in recorded.items():
        if not isinstance(want, list) or len(want) != 2 or not isinstance(want[0], int):
            return "its record of what was written is unreadable"
        try:
            data = read_regular(path / name, want[0])
        except OSError as exc:
            return f"{name}: {exc.strerror or type(exc).__name__}"
        if len(data) != want[0] or hashlib.sha256(data).hexdigest() != want[1]:
            return f"{name} is not what was written"
    return None


def read_files(path: Path) -> dict[str, bytes] | None:
    """A whole snapshot's files (name -> bytes) as its manifest records them, or None
    when it is missing, damaged or has no manifest. Never raises."""
    if verify(path) is not None:
        return None
    try:
        recorded = json.loads(read_regular(_manifest_file(path), _MANIFEST_CAP))
        return {name: read_regular(path / name, want[0]) for name, want in recorded.items()}
    except (OSError, ValueError, TypeError, IndexError):
        return None


def save(
    root: Path,
    repo_id: str,
    commit: str,
    revision: str,
    files: Mapping[str, bytes],
    *,
    replace: bool = False,
) -> StoredModel:
    """Write a snapshot (file name -> bytes) and point `revision` at it.

    A whole snapshot already there is kept (unless `replace`: a GGUF read adding another
    quant's header passes the old files and the new together); a damaged one is
    replaced. Raises OSError (a local fault: no room, read-only, not a folder) and
    leaves no temporary folder behind.
    """
    repo = root / repo_folder_name(repo_id)
    final = repo / "snapshots" / commit
    if replace or verify(final) is not None:
        _sweep_stale(repo / "snapshots")
        tmp = repo / "snapshots" / f".tmp-{commit}-{os.getpid()}"
        old = repo / "snapshots" / f".old-{commit}-{os.getpid()}"
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            for name, data in files.items():
                (tmp / name).write_bytes(data)
            atomic_write(_manifest_file(final), json.dumps(_manifest(files)).encode())
            if final.is_dir():  # damaged or replaced: set aside, the whole one in its place
                os.rename(final, old)
            try:
                os.rename(tmp, final)
            except OSError:  # another process stored the same commit first: keep theirs
                if not final.is_dir():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
    set_ref(root, repo_id, revision, commit)
    return StoredModel(repo_id, commit, final)


def _sweep_stale(snapshots: Path) -> None:
    """Remove temporary folders of processes that are gone (killed mid-write)."""
    with contextlib.suppress(OSError):
        for entry in snapshots.iterdir():
            parts = entry.name.split("-")
            stale = len(parts) == 3 and parts[0] in (".tmp", ".old") and parts[2].isdigit()
            if stale and not _alive(int(parts[2])):
                shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def set_ref(root: Path, repo_id: str, revision: str, commit: str) -> None:
    """Record which commit `revision` pointed to (nothing for a commit itself)."""
    ref = None if COMMIT_RE.fullmatch(revision) else _ref_file(root, repo_id, revision)
    if ref is None:
        return
    atomic_write(ref, (commit + "\n").encode("ascii"))


def list_stored(root: Path) -> list[StoredModel]:
    """Every stored repo at the snapshot `refs/main` names, else its newest one."""
    out: list[StoredModel] = []
    try:
        repos = sorted(p for p in root.iterdir() if p.name.startswith("models--"))
    except OSError:
        return out
    for repo in repos:
        parts = repo.name.removeprefix("models--").split("--")
        if len(parts) != 2 or not is_repo_id("/".join(parts)):
            continue
        repo_id = "/".join(parts)
        try:
            snaps = [p for p in (repo / "snapshots").iterdir() if COMMIT_RE.fullmatch(p.name)]
        except OSError:
            continue
        if not snaps:
            continue
        refs: dict[str, list[str]] = {}
        try:
            for ref in (repo / "refs").rglob("*"):
                if ref.is_file() and not ref.name.startswith("."):
                    commit = _read_ref(ref)
                    refs.setdefault(commit, []).append(str(ref.relative_to(repo / "refs")))
        except (OSError, ValueError):
            pass
        main = lookup(root, repo_id, "main")
        pick = main.path if main is not None else max(snaps, key=_mtime)
        out.append(StoredModel(repo_id, pick.name, pick, tuple(sorted(refs.get(pick.name, [])))))
    return out


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _read_ref(ref: Path) -> str:
    """A ref file's commit (a regular file of a few bytes; never blocks on a FIFO)."""
    return read_regular(ref, 256)[:256].decode("ascii").strip()
