"""The vramscope Hub store: header-only copies of repos read from the Hub.

Layout, keyed by repo and commit like the HF cache:
`hub/models--org--name/snapshots/<commit>/` holds `config.json` and
`model.safetensors.index.json` byte for byte and every `*.safetensors` as its
8-byte length plus header JSON (no data region), so `read_model_dir` on the
folder reads exactly what it would read from the real files.
`hub/models--org--name/refs/<revision>` holds the commit a revision pointed to
when it was read. A snapshot is written under a temporary name and renamed into
place, so a reader never sees half of one.
"""

from __future__ import annotations

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
_REF_RE = re.compile(r"[A-Za-z0-9._/-]{1,200}")


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


def _ref_file(root: Path, repo_id: str, revision: str) -> Path | None:
    if _REF_RE.fullmatch(revision) is None or ".." in revision:
        return None
    return root / repo_folder_name(repo_id) / "refs" / revision


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


def save(
    root: Path, repo_id: str, commit: str, revision: str, files: Mapping[str, bytes]
) -> StoredModel:
    """Write a snapshot (file name -> bytes) and point `revision` at it."""
    repo = root / repo_folder_name(repo_id)
    final = repo / "snapshots" / commit
    if not final.is_dir():
        tmp = repo / "snapshots" / f".tmp-{commit}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        try:
            os.rename(tmp, final)
        except OSError:  # another process stored the same commit first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    set_ref(root, repo_id, revision, commit)
    return StoredModel(repo_id, commit, final)


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
