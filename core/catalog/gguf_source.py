"""A MODEL argument that names a GGUF model: a `.gguf` file, a folder holding GGUF files
(and no `config.json`), or `REPO:QUANT` on the Hub. The way in for `inspect`; anything
else is left to `resolve` (safetensors folders, profiles, the HF cache, Hub repos)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.model.config import CONFIG_FILE

if TYPE_CHECKING:
    from core.gguf.record import GgufModel
    from core.hub.remote import HubOptions


@dataclass(frozen=True)
class GgufSource:
    """A GGUF model read, and where from (the report's `Source:` line)."""

    model: GgufModel
    source: str


def _existing(name: str) -> Path | None:
    try:  # `~\x00` asks the password database for a user with a NUL: ValueError
        path = Path(os.path.expanduser(name))
        return path if os.path.lexists(path) else None
    except (OSError, ValueError):
        return None


def holds_gguf(folder: Path) -> bool:
    """A folder of GGUF files and no `config.json` (a safetensors model folder wins)."""
    try:
        names = [p.name for p in folder.iterdir()]
    except OSError:
        return False
    return CONFIG_FILE not in names and any(n.endswith(".gguf") for n in names)


def names_gguf(name: str) -> bool:
    """Whether `read_gguf_source` would take `name` as a GGUF model, from its shape and
    the folder's names alone (nothing read): a `.gguf` path, a folder of GGUF files, or
    `REPO:QUANT`."""
    path = _existing(name)
    if path is not None:
        return holds_gguf(path) if path.is_dir() else name.endswith(".gguf")
    if ":" not in name:
        return False
    from core.gguf.pick import split_repo_tag
    from core.hub.store import is_repo_id

    repo, tag = split_repo_tag(name)
    return bool(tag) and is_repo_id(repo)


def read_gguf_source(
    name: str, hub: HubOptions | None = None, env: Mapping[str, str] | None = None
) -> GgufSource | None:
    """The GGUF model `name` names, or None when it names no GGUF (resolve it as before).
    Raises GgufError, ModelNotFoundError, HubError... one line each."""
    path = _existing(name)
    if path is not None:
        if path.is_dir():
            if not holds_gguf(path):
                return None
            from core.gguf.local import read_gguf_model

            return GgufSource(read_gguf_model(path), f"local folder {path}")
        if not name.endswith(".gguf"):
            return None
        from core.gguf.local import read_gguf_model

        return GgufSource(read_gguf_model(path), "local file")
    if hub is None or ":" not in name:
        return None  # without Hub options, as resolve: a name is never looked up there
    from core.gguf.pick import split_repo_tag
    from core.hub.store import is_repo_id

    repo, tag = split_repo_tag(name)
    if not tag or not is_repo_id(repo):
        return None
    cached = _from_hf_cache(repo, tag, env)
    if cached is not None:
        return cached
    from core.hub.gguf_remote import read_hub_gguf

    got = read_hub_gguf(repo, tag, hub, env)
    notes = (got.read.note,) if got.read.note else ()
    model = got.model
    if notes:
        from dataclasses import replace

        model = replace(model, notes=model.notes + notes)
    return GgufSource(model, got.read.source)


_CACHE_FILES_CAP = 4096


def cached_gguf(repo_tag: str, env: Mapping[str, str] | None = None) -> GgufSource | None:
    """llama.cpp's `-hf REPO[:QUANT]` (no quant: its default pick) from the Hugging Face
    cache alone; None when the name is no repo id or the cache does not hold it whole
    (`vramscope run` reads what the command loaded, never the Hub)."""
    from core.gguf.pick import split_repo_tag
    from core.hub.store import is_repo_id

    repo, tag = split_repo_tag(repo_tag)
    if not is_repo_id(repo):
        return None
    return _from_hf_cache(repo, tag, env)


def _from_hf_cache(repo: str, tag: str, env: Mapping[str, str] | None) -> GgufSource | None:
    """`REPO:QUANT` from the Hugging Face cache, where `llama-server -hf` downloads it:
    the snapshot `refs/main` names (else the newest), when it holds every part of the
    picked file; None otherwise (the Hub answers)."""
    from core.catalog.resolve import hf_cache_dir_or_none
    from core.errors import ModelNotFoundError
    from core.gguf.local import part_paths, read_picked
    from core.gguf.pick import pick
    from core.paths import repo_folder_name
    from core.regular_file import read_regular

    cache = hf_cache_dir_or_none(env)
    if cache is None:
        return None
    repo_dir = cache / repo_folder_name(repo)
    try:
        commit = read_regular(repo_dir / "refs" / "main", 256)[:256].decode("ascii").strip()
        snapshot = repo_dir / "snapshots" / commit
        if not commit or not snapshot.is_dir():
            snapshots = [p for p in (repo_dir / "snapshots").iterdir() if p.is_dir()]
            snapshot = max(snapshots, key=lambda p: p.stat().st_mtime)
    except (OSError, ValueError):
        return None
    names: list[str] = []
    for folder, _, files in os.walk(snapshot):
        rel = Path(folder).relative_to(snapshot)
        names += sorted((rel / f).as_posix() for f in files if f.endswith(".gguf"))
        if len(names) > _CACHE_FILES_CAP:
            return None
    try:
        chosen, _ = pick(names, tag, repo)
    except ModelNotFoundError:
        return None
    if not all(p.exists() for p in part_paths(snapshot / chosen[0])):
        return None  # a split download not finished: the Hub answers
    model = read_picked(snapshot, names, tag, f"{repo} in the HF cache")
    return GgufSource(model, f"Hugging Face cache ({snapshot})")
