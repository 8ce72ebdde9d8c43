"""Where catalog entries come from: built-in profiles, model folders, the HF cache.

Work per model is bounded by its file count, never its bytes: a config, an
index, at most one safetensors header, and a `stat` per weight file. Whatever
cannot be read becomes a `SkippedModel` with its reason.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from core.catalog.disk_cache import ACTIVE as ACTIVE_DISK_CACHE
from core.catalog.entry import (
    ORIGIN_BUILTIN,
    ORIGIN_FOLDER,
    ORIGIN_HF_CACHE,
    ORIGIN_HUB,
    CatalogEntry,
    EntryOrigin,
    SkippedModel,
)
from core.catalog.hf_cache import (
    CachedModel,
    scan_hf_cache,
)
from core.catalog.model_dir import check_model_dir, read_model_dir, unreadable_folder_reason
from core.catalog.profiles import load_profile, profile_snapshot
from core.errors import (
    FileFault,
    ModelError,
    ShardIndexError,
    describe_os_error,
)
from core.estimate.snapshot import ModelSnapshot, snapshot_from_config
from core.estimate.weights import WeightsSource, WeightsTerm
from core.model.config import (
    CONFIG_FILE,
    ModelConfig,
    decode_json,
    load_config,
    read_small_file,
)
from core.model.format import describe_format
from core.model.safetensors_header import DTYPE_ITEMSIZE
from core.model.trained_context import trained_context
from core.model.weight_files import (
    INDEX_FILE,
    INDEX_SIZE_CAP,
    is_acceptable_shard_name,
    read_index_shards,
)
from core.numbers import decimal_to_int
from core.regular_file import open_regular

# A file whose allocated blocks cover less than this share of its size is sparse:
# a header-only skeleton, not weights one could load.
_ALLOCATED_SHARE = 0.5


def display_context(config: ModelConfig | None) -> int | None:
    """The trained context (`core.model.trained_context`'s rules), None where unsaid."""
    found = trained_context(config)
    return found.tokens if found is not None else None


def profile_entry(repo_id: str) -> CatalogEntry:
    """The catalog entry of a built-in profile (KeyError if there is none)."""
    profile = load_profile(repo_id)
    snap = profile_snapshot(profile)
    return CatalogEntry(
        name=repo_id,
        origin=ORIGIN_BUILTIN,
        format_label=describe_format(profile.config, profile.dtype_bytes),
        weight_bytes=snap.weights.bytes,
        weights_source=snap.weights.source,
        kv_kind=snap.kv_arch.kind if snap.kv_arch else None,
        max_position_embeddings=display_context(profile.config),
        weights_on_disk=False,
        profile_id=repo_id,
    )


def profile_dtypes(repo_id: str) -> dict[str, int]:
    """Bytes per dtype of a profile's tensors."""
    return dict(load_profile(repo_id).dtype_bytes)


def _index_shards(path: Path) -> tuple[str, ...]:
    """Shard names an index lists; empty if it cannot be read (mlxcel then ignores it)."""
    try:
        index = decode_json(read_small_file(path / INDEX_FILE, INDEX_SIZE_CAP), INDEX_FILE)
    except (OSError, ValueError):
        return ()
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        return ()
    names = {v for v in weight_map.values() if isinstance(v, str) and is_acceptable_shard_name(v)}
    return tuple(sorted(names))


def path_exists(path: Path) -> bool:
    """`Path.exists` that treats loops and unusable names as missing."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _not_a_model_reason(names: frozenset[str]) -> str | None:
    """Why a listed folder is not a model folder at all, or None if it may be one."""
    if CONFIG_FILE in names:
        return None
    if any(n.endswith(".safetensors") for n in names):
        return "no config.json next to the *.safetensors (an adapter, or a partial download?)"
    # An index alone is read when the folder is named (mlxcel's order), never listed.
    return unreadable_folder_reason(names, index_is_weights=False)


def _usual_index(path: Path) -> tuple[tuple[str, ...], int] | None:
    """(shards, total_size) when the index is valid and has `metadata.total_size`."""
    try:
        shards, total = read_index_shards(path)
    except ShardIndexError:
        return None
    return (tuple(shards), total) if total is not None else None


def _read_folder(path: Path, name: str, names: frozenset[str]) -> tuple[ModelSnapshot, list[str]]:
    """The folder's snapshot exactly as `read_model_dir` reads it, and its weight files.

    The usual layout (a valid index with `metadata.total_size`, a readable config)
    is read here directly so the index is parsed once, not twice; anything else
    goes through `read_model_dir` itself.
    """
    usual = _usual_index(path) if INDEX_FILE in names else None
    if usual is not None:
        try:
            config = load_config(path)
        except FileFault:
            pass
        else:
            weights = WeightsTerm(usual[1], WeightsSource.SAFETENSORS_HEADER, (), (INDEX_FILE,))
            return snapshot_from_config(name, config, weights), list(usual[0])
    snap = read_model_dir(path, name)
    files = (
        list(snap.weights.files) if snap.weights.source is WeightsSource.SAFETENSORS_HEADER else []
    )
    if files == [INDEX_FILE]:  # total_size with an unreadable config: shards for the disk check
        files = list(_index_shards(path))
    return snap, files


# A header prefix is enough to name the float format; reading it stays O(1) per model.
_LABEL_PREFIX = 4096
_DTYPE_SHAPE = re.compile(rb'"dtype"\s*:\s*"([A-Z0-9_]+)"\s*,\s*"shape"\s*:\s*\[([0-9,\s]*)\]')


def _dtype_bytes(path: Path, files: Sequence[str]) -> dict[str, int]:
    """Bytes per dtype over the first tensors of the first weight file (label only)."""
    if not files:
        return {}
    try:
        with open_regular(path / files[0]) as fh:
            prefix = fh.read(8 + _LABEL_PREFIX)
    except OSError:
        return {}
    out: dict[str, int] = {}
    for dtype, dims in _DTYPE_SHAPE.findall(prefix[8:]):
        size = DTYPE_ITEMSIZE.get(dtype.decode())
        if size is not None:
            key = dtype.decode()
            shape = [decimal_to_int(d.strip().decode()) for d in dims.split(b",") if d.strip()]
            if all(d is not None for d in shape):
                out[key] = out.get(key, 0) + size * math.prod(d for d in shape if d is not None)
    return out


def _weights_on_disk(path: Path, files: Sequence[str], weight_bytes: int) -> bool:
    """True when every weight file is a regular file, they hold at least `weight_bytes`
    and they are not sparse (a header-only skeleton has the size but no blocks)."""
    if not files:
        return False
    size = allocated = 0
    for name in files:
        try:
            st = (path / name).stat()
        except (OSError, ValueError):
            return False
        if not stat.S_ISREG(st.st_mode):
            return False
        size += st.st_size
        allocated += st.st_blocks * 512
    return size >= weight_bytes and allocated >= size * _ALLOCATED_SHARE


def _entry_from_snapshot(
    snap: ModelSnapshot,
    files: Sequence[str],
    path: Path,
    *,
    name: str,
    origin: EntryOrigin,
    revision: str | None = None,
    refs: tuple[str, ...] = (),
) -> CatalogEntry:
    # The quantization block names the format by itself; only read a header when needed.
    root = snap.config.root if snap.config else {}
    needs_dtypes = not isinstance(root.get("quantization"), dict)
    return CatalogEntry(
        name=name,
        origin=origin,
        format_label=describe_format(
            snap.config, _dtype_bytes(path, files) if needs_dtypes else {}
        ),
        weight_bytes=snap.weights.bytes,
        weights_source=snap.weights.source,
        kv_kind=snap.kv_arch.kind if snap.kv_arch else None,
        max_position_embeddings=display_context(snap.config),
        weights_on_disk=_weights_on_disk(path, files, snap.weights.bytes),
        path=path,
        revision=revision,
        refs=refs,
        warnings=snap.warnings,
    )


def folder_entry(path: Path, display: str | None = None) -> CatalogEntry:
    """The entry of a folder named explicitly: read as mlxcel would, with no skipping.

    Raises ModelError when the path is not a readable folder.
    """
    name = display if display is not None else path.name
    check_model_dir(path)
    try:
        names = frozenset(os.listdir(path))
    except OSError as exc:
        raise ModelError(path, f"cannot list the folder: {describe_os_error(exc)}") from None
    snap, files = _read_folder(path, name, names)
    return _entry_from_snapshot(snap, files, path, name=name, origin=ORIGIN_FOLDER)


# Entries already read, by folder, with the file identities they were read from: a
# second build (the explorer's refresh, `models` after `inspect`) only lists and stats.
_MEMO: dict[tuple[str, str, str, str | None, tuple[str, ...]], tuple[object, CatalogEntry]] = {}
_MEMO_FILES = (CONFIG_FILE, INDEX_FILE)


def _identity(path: Path, names: frozenset[str]) -> object | None:
    """What the entry of a folder depends on: its config, index and weight files' stats."""
    key = []
    for name in sorted(n for n in names if n in _MEMO_FILES or n.endswith(".safetensors")):
        try:
            st = (path / name).stat()
        except (OSError, ValueError):
            return None
        key.append((name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_blocks))
    return tuple(key)


def _listed_model(
    path: Path,
    name: str,
    origin: EntryOrigin,
    *,
    revision: str | None = None,
    refs: tuple[str, ...] = (),
) -> CatalogEntry | SkippedModel:
    """A discovered folder as an entry, or the reason it is skipped."""

    def skip(reason: str) -> SkippedModel:
        return SkippedModel(str(path), reason, name)

    try:
        names = frozenset(os.listdir(path))
    except OSError as exc:
        return skip(f"cannot list the folder: {describe_os_error(exc)}")
    reason = _not_a_model_reason(names)
    if reason is not None:
        return skip(reason)
    memo_key = (str(path), name, origin.value, revision, refs)  # a JSON key: the word
    identity = _identity(path, names)
    cached = _MEMO.get(memo_key)
    if cached is not None and identity is not None and cached[0] == identity:
        return cached[1]
    disk = ACTIVE_DISK_CACHE.get()
    disk_key = json.dumps(memo_key)
    if disk is not None and identity is not None:
        stored = disk.get(disk_key, identity)
        if stored is not None:
            _MEMO[memo_key] = (identity, stored)
            return stored
    try:
        snap, files = _read_folder(path, name, names)
    except ModelError as exc:
        return skip(exc.problem)
    except MemoryError:
        return skip("out of memory while reading its headers")
    if INDEX_FILE in names and snap.weights.files != (INDEX_FILE,):
        # The index was not usable: a partial download if shards it lists are missing.
        shards = _index_shards(path)
        missing = [s for s in shards if s not in names or not path_exists(path / s)]
        if missing:
            return skip(
                f"download incomplete: {len(missing)} of the {len(shards)} shards its index "
                f"lists are missing ({missing[0]}{', ...' if len(missing) > 1 else ''})"
            )
    if snap.config is None:
        return skip(snap.warnings[0] if snap.warnings else "config.json cannot be read")
    if snap.kv_arch is None and snap.activation_dims is None:
        return skip("config.json has no model architecture (no hidden size or layer count)")
    entry = _entry_from_snapshot(
        snap, files, path, name=name, origin=origin, revision=revision, refs=refs
    )
    if identity is not None:
        _MEMO[memo_key] = (identity, entry)
        if disk is not None:
            disk.put(disk_key, identity, entry)
    return entry


def hf_cache_entries(cache_dir: Path) -> tuple[list[CatalogEntry], list[SkippedModel]]:
    """Entries for the model repos of an HF cache, and what was skipped there."""
    scan = scan_hf_cache(cache_dir)
    entries: list[CatalogEntry] = []
    skipped = [SkippedModel(p.location, p.reason, p.repo_id) for p in scan.problems]
    for model in scan.models:
        result = cached_model_entry(model)
        _sort_into(result, entries, skipped)
        for other in model.other_revisions:
            skipped.append(
                SkippedModel(
                    str(model.repo_path / "snapshots" / other),
                    f"older snapshot; the catalog shows {model.commit_hash[:8]}"
                    + (f" ({', '.join(model.refs)})" if model.refs else ""),
                    model.repo_id,
                )
            )
    return entries, skipped


def hub_store_entries(root: Path) -> tuple[list[CatalogEntry], list[SkippedModel]]:
    """Entries for the repos read from the Hub before (the vramscope Hub store; no network)."""
    from core.hub.store import list_stored

    entries: list[CatalogEntry] = []
    skipped: list[SkippedModel] = []
    for model in list_stored(root):
        result = _listed_model(
            model.path, model.repo_id, ORIGIN_HUB, revision=model.commit, refs=model.refs
        )
        _sort_into(result, entries, skipped)
    return entries, skipped


def _sort_into(
    result: CatalogEntry | SkippedModel, entries: list[CatalogEntry], skipped: list[SkippedModel]
) -> None:
    if isinstance(result, CatalogEntry):
        entries.append(result)
    else:
        skipped.append(result)


def cached_model_entry(model: CachedModel) -> CatalogEntry | SkippedModel:
    fix = f"; finish it with `hf download {model.repo_id}`"
    if model.incomplete_files:
        first = model.incomplete_files[0].name.removesuffix(".incomplete")
        first = first if len(first) <= 16 else first[:12] + "..."
        return SkippedModel(
            str(model.repo_path),
            f"download not finished: {len(model.incomplete_files)} partial file(s) in blobs/ "
            f"({first}.incomplete){fix}",
            model.repo_id,
        )
    result = _listed_model(
        model.snapshot_path,
        model.repo_id,
        ORIGIN_HF_CACHE,
        revision=model.commit_hash,
        refs=model.refs,
    )
    if isinstance(result, SkippedModel) and result.reason.startswith("download incomplete"):
        return SkippedModel(result.location, result.reason + fix, result.name)
    return result


def _is_model_dir(path: Path) -> bool:
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return CONFIG_FILE in names or any(n.endswith(".safetensors") for n in names)


def _subdirs(path: Path) -> tuple[list[tuple[str, Path]], list[SkippedModel]]:
    """Visible sub-folders of `path` (following symlinks); broken links are skipped."""
    found: list[tuple[str, Path]] = []
    skipped: list[SkippedModel] = []
    with os.scandir(path) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            is_dir = stat.S_ISDIR(os.stat(entry.path).st_mode)
        except OSError as exc:
            if entry.is_symlink():
                skipped.append(
                    SkippedModel(entry.path, f"broken symlink: {describe_os_error(exc)}")
                )
            else:
                skipped.append(SkippedModel(entry.path, describe_os_error(exc)))
            continue
        if is_dir:
            found.append((entry.name, Path(entry.path)))
    return found, skipped


def models_dir_entries(root: Path) -> tuple[list[CatalogEntry], list[SkippedModel]]:
    """Models in a folder of model folders (`root/name` or `root/org/name`).

    `root` may itself be a model folder, or an HF cache (`models--*` folders).
    """
    entries: list[CatalogEntry] = []
    skipped: list[SkippedModel] = []

    def add(result: CatalogEntry | SkippedModel) -> None:
        _sort_into(result, entries, skipped)

    try:
        if not stat.S_ISDIR(root.stat().st_mode):
            return [], [SkippedModel(str(root), "models folder: not a folder")]
    except OSError as exc:
        return [], [SkippedModel(str(root), f"models folder: {describe_os_error(exc)}")]
    except ValueError:  # a NUL byte in the name
        return [], [SkippedModel(repr(str(root)), "models folder: not a valid path")]
    if _is_model_dir(root):
        add(_listed_model(root, root.name, ORIGIN_FOLDER))
        return entries, skipped
    try:
        children, broken = _subdirs(root)
    except OSError as exc:
        return [], [SkippedModel(str(root), f"cannot list the folder: {describe_os_error(exc)}")]
    skipped.extend(broken)
    if any(name.startswith("models--") for name, _ in children):
        cached, cache_skipped = hf_cache_entries(root)
        entries.extend(cached)
        skipped.extend(cache_skipped)
    for name, child in children:
        if "--" in name and name.split("--", 1)[0] in ("models", "datasets", "spaces"):
            continue  # HF cache repos, read above
        result = _listed_model(child, name, ORIGIN_FOLDER)
        if isinstance(result, SkippedModel) and result.reason.startswith("not a model folder"):
            nested = _org_folder_entries(child, name)
            if nested is not None:
                entries.extend(nested[0])
                skipped.extend(nested[1])
                continue
        add(result)
    return entries, skipped


def _org_folder_entries(
    folder: Path, org: str
) -> tuple[list[CatalogEntry], list[SkippedModel]] | None:
    """`org/name` models one level down, or None if `folder` holds no model folder."""
    try:
        subs, broken = _subdirs(folder)
    except OSError:
        return None
    models = [(name, path) for name, path in subs if _is_model_dir(path)]
    if not models:
        return None
    entries: list[CatalogEntry] = []
    skipped: list[SkippedModel] = list(broken)
    for name, path in subs:
        _sort_into(_listed_model(path, f"{org}/{name}", ORIGIN_FOLDER), entries, skipped)
    return entries, skipped
