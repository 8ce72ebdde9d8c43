"""The model catalog: built-in profiles, the Hugging Face cache and model folders.

One way to name a model everywhere: a folder path, a built-in profile name
(`mlx-community/Meta-Llama-3.1-8B-Instruct-4bit`), a repo id in the local HF
cache, or a model folder's name inside a `--models-dir` folder. Nothing here
reaches the network, and `build_catalog` never raises: whatever cannot be read
becomes a `SkippedModel` with its reason, so a UI can build the catalog in a
worker thread and always get an answer.

Work per model is bounded by its file count, never its bytes: a config, an
index, at most one safetensors header, and a `stat` per weight file.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from core.config import (
    CONFIG_FILE,
    ModelConfig,
    decode_json,
    load_config,
    read_small_file,
)
from core.errors import (
    FileFault,
    ModelError,
    ModelNotFoundError,
    ShardIndexError,
    describe_os_error,
)
from core.hf_cache import (
    CachedModel,
    hf_cache_dir,
    repo_folder_name,
    scan_hf_cache,
    scan_hf_cache_repo,
)
from core.kv_cache import KvKind
from core.model import ModelSnapshot, check_model_dir, read_model_dir, snapshot_from_config
from core.model_format import describe_format
from core.profiles import list_profile_ids, load_profile, profile_snapshot
from core.safetensors_header import DTYPE_ITEMSIZE
from core.weights import (
    INDEX_FILE,
    INDEX_SIZE_CAP,
    WeightsSource,
    WeightsTerm,
    is_plain_file_name,
    read_index_shards,
)

ORIGIN_BUILTIN = "built-in"
ORIGIN_HF_CACHE = "hf-cache"
ORIGIN_FOLDER = "folder"

MODELS_DIR_ENV = "VRAMSCOPE_MODELS_DIR"
"""Extra folders of models, separated like PATH (`os.pathsep`)."""

# When several entries share a name, the one with real files wins over the profile.
_ORIGIN_RANK = {ORIGIN_HF_CACHE: 0, ORIGIN_FOLDER: 1, ORIGIN_BUILTIN: 2}

# Display-only context defaults for families whose configs leave the field out
# (Gemma 3's sparse `text_config`: `Gemma3TextConfig.max_position_embeddings`).
FAMILY_CONTEXT_DEFAULTS = {"gemma3": 131072}

# A file whose allocated blocks cover less than this share of its size is sparse:
# a header-only skeleton, not weights one could load.
_ALLOCATED_SHARE = 0.5


@dataclass(frozen=True)
class CatalogEntry:
    """One model the user can pick, with what the list shows about it."""

    name: str
    """Display name: the repo id for profiles and cache entries, the folder name otherwise."""
    origin: str
    """`built-in`, `hf-cache` or `folder`."""
    format_label: str
    """E.g. `MLX 4-bit g64`, `MLX mixed 4/6-bit g64`, `BF16`, `GPTQ 4-bit g128`."""
    weight_bytes: int
    weights_source: WeightsSource
    kv_kind: KvKind | None
    max_position_embeddings: int | None
    weights_on_disk: bool
    """True when real weight data is present (needed to measure with real weights)."""
    path: Path | None = None
    """The model folder (snapshot folder for HF cache entries); None for profiles."""
    revision: str | None = None
    """HF cache commit hash of the snapshot shown."""
    profile_id: str | None = None
    refs: tuple[str, ...] = ()
    """HF cache refs pointing at that snapshot (`main`, ...)."""

    @property
    def origin_label(self) -> str:
        """Where it came from, for display."""
        if self.origin == ORIGIN_HF_CACHE and self.revision:
            at = f"{self.refs[0]} " if self.refs else ""
            return f"HF cache @ {at}{self.revision[:8]}"
        return {ORIGIN_BUILTIN: "built-in profile", ORIGIN_FOLDER: "folder"}.get(
            self.origin, self.origin
        )


@dataclass(frozen=True)
class SkippedModel:
    """Something that looked like a model but was left out, and why."""

    location: str
    reason: str
    name: str | None = None
    """The name it would have had (a repo id for HF cache entries), when known."""


@dataclass(frozen=True)
class Catalog:
    """Entries in display order plus what was skipped."""

    entries: tuple[CatalogEntry, ...]
    skipped: tuple[SkippedModel, ...] = field(default=())
    hf_cache_dir: Path | None = None
    """The HF cache folder that was read (None when it was not searched)."""
    models_dirs: tuple[Path, ...] = ()
    """The model folders that were searched, flags first, then VRAMSCOPE_MODELS_DIR."""


# --- Entries of each origin --------------------------------------------------------------


def display_context(config: ModelConfig | None) -> int | None:
    """`max_position_embeddings`, or the family default where configs leave it out."""
    if config is None:
        return None
    value = config.max_position_embeddings()
    if value is None and config.family is not None:
        return FAMILY_CONTEXT_DEFAULTS.get(config.family)
    return value


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
    names = {v for v in weight_map.values() if isinstance(v, str) and is_plain_file_name(v)}
    return tuple(sorted(names))


def _exists(path: Path) -> bool:
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
    if any(n.endswith(".gguf") for n in names):
        return "GGUF files only; vramscope reads safetensors models with a config.json"
    return "not a model folder (no config.json, no *.safetensors)"


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
        with (path / files[0]).open("rb") as fh:
            prefix = fh.read(8 + _LABEL_PREFIX)
    except OSError:
        return {}
    out: dict[str, int] = {}
    for dtype, dims in _DTYPE_SHAPE.findall(prefix[8:]):
        size = DTYPE_ITEMSIZE.get(dtype.decode())
        if size is not None:
            key = dtype.decode()
            out[key] = out.get(key, 0) + size * math.prod(
                int(d) for d in dims.split(b",") if d.strip()
            )
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
    origin: str,
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
    origin: str,
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
    memo_key = (str(path), name, origin, revision, refs)
    identity = _identity(path, names)
    cached = _MEMO.get(memo_key)
    if cached is not None and identity is not None and cached[0] == identity:
        return cached[1]
    try:
        snap, files = _read_folder(path, name, names)
    except ModelError as exc:
        return skip(exc.problem)
    if INDEX_FILE in names and snap.weights.files != (INDEX_FILE,):
        # The index was not usable: a partial download if shards it lists are missing.
        shards = _index_shards(path)
        missing = [s for s in shards if s not in names or not _exists(path / s)]
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
    return entry


def hf_cache_entries(cache_dir: Path) -> tuple[list[CatalogEntry], list[SkippedModel]]:
    """Entries for the model repos of an HF cache, and what was skipped there."""
    scan = scan_hf_cache(cache_dir)
    entries: list[CatalogEntry] = []
    skipped = [SkippedModel(p.location, p.reason, p.repo_id) for p in scan.problems]
    for model in scan.models:
        result = _cached_model_entry(model)
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


def _sort_into(
    result: CatalogEntry | SkippedModel, entries: list[CatalogEntry], skipped: list[SkippedModel]
) -> None:
    if isinstance(result, CatalogEntry):
        entries.append(result)
    else:
        skipped.append(result)


def _cached_model_entry(model: CachedModel) -> CatalogEntry | SkippedModel:
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


# --- The catalog -------------------------------------------------------------------------


def models_dirs_from_env(env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders in VRAMSCOPE_MODELS_DIR (separated by os.pathsep; `~` expanded)."""
    raw = (os.environ if env is None else env).get(MODELS_DIR_ENV, "")
    return [Path(os.path.expanduser(p)) for p in raw.split(os.pathsep) if p.strip()]


def _real(path: Path | str) -> str:
    """The resolved path, to tell two spellings of one folder apart; as given if it cannot be."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):  # a loop, a NUL byte: compare the text
        return str(path)


def _all_models_dirs(
    models_dirs: Iterable[Path | str], env: Mapping[str, str] | None
) -> list[Path]:
    """Flags first, then the environment; each folder once; empty names ignored."""
    seen: set[str] = set()
    out: list[Path] = []
    flags = [Path(os.path.expanduser(str(d))) for d in models_dirs if str(d).strip()]
    for d in [*flags, *models_dirs_from_env(env)]:
        key = _real(d)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _guarded(
    where: str, fn: Callable[[], tuple[list[CatalogEntry], list[SkippedModel]]]
) -> tuple[list[CatalogEntry], list[SkippedModel]]:
    try:
        return fn()
    except Exception as exc:  # the catalog never raises: a surprise becomes a skipped line
        return [], [SkippedModel(where, f"unexpected error: {type(exc).__name__}: {exc}")]


def _sort_key(entry: CatalogEntry) -> tuple[int, str, str]:
    rank = {ORIGIN_FOLDER: 0, ORIGIN_HF_CACHE: 1, ORIGIN_BUILTIN: 2}.get(entry.origin, 3)
    return (rank, entry.name.casefold(), str(entry.path or ""))


def build_catalog(
    models_dirs: Sequence[Path | str] = (),
    *,
    hf_cache_dir: Path | str | None = None,
    include_profiles: bool = True,
    include_hf_cache: bool = True,
    env: Mapping[str, str] | None = None,
) -> Catalog:
    """Every model vramscope can name: folders, the HF cache, built-in profiles.

    `models_dirs` come before VRAMSCOPE_MODELS_DIR; `hf_cache_dir` defaults to the
    folder huggingface_hub would use under `env` (default os.environ). Never raises.
    """
    entries: list[CatalogEntry] = []
    skipped: list[SkippedModel] = []
    dirs = _all_models_dirs(models_dirs, env)
    for d in dirs:
        found, left = _guarded(str(d), partial(models_dir_entries, d))
        entries.extend(found)
        skipped.extend(left)
    cache: Path | None = None
    if include_hf_cache:
        cache = Path(hf_cache_dir) if hf_cache_dir is not None else hf_cache_dir_or_none(env)
        if cache is not None:
            found, left = _guarded(str(cache), partial(hf_cache_entries, cache))
            entries.extend(found)
            skipped.extend(left)
    if include_profiles:
        for repo_id in list_profile_ids():
            found, left = _guarded(repo_id, partial(_profile_entries, repo_id))
            entries.extend(found)
            skipped.extend(left)
    unique: dict[str, CatalogEntry] = {}
    for entry in entries:  # the same folder reached twice (a link, two roots) is listed once
        key = _real(entry.path) if entry.path else f"profile:{entry.profile_id}"
        unique.setdefault(key, entry)
    return Catalog(
        tuple(sorted(unique.values(), key=_sort_key)), tuple(skipped), cache, tuple(dirs)
    )


def _profile_entries(repo_id: str) -> tuple[list[CatalogEntry], list[SkippedModel]]:
    return [profile_entry(repo_id)], []


def hf_cache_dir_or_none(env: Mapping[str, str] | None = None) -> Path | None:
    """The HF cache folder from the environment (None if it cannot be worked out)."""
    try:
        return hf_cache_dir(env)
    except (OSError, ValueError, RuntimeError):
        return None


# --- Naming a model ----------------------------------------------------------------------


def _path_like(name: str) -> bool:
    """A name that can only mean a path: absolute, `./x`, `~/x`, or with 2+ separators."""
    return (
        os.path.isabs(name)
        or name.startswith((".", "~"))
        or name.endswith(("/", os.sep))
        or name.count("/") > 1
    )


def _existing_path(name: str) -> Path | None:
    """The path a MODEL argument names if something is there (even a broken link)."""
    if not name:
        return None
    path = Path(os.path.expanduser(name)) if name.startswith("~") else Path(name)
    try:
        return path if os.path.lexists(path) else None
    except (OSError, ValueError):
        return None


def _describe(entry: CatalogEntry) -> str:
    where = entry.origin_label if entry.path is None else f"{entry.origin_label} {entry.path}"
    return f"{entry.name} ({where})"


def _pick(name: str, candidates: list[CatalogEntry]) -> CatalogEntry | None:
    """One entry among same-tier matches, or ModelError if they are ambiguous."""
    if not candidates:
        return None
    if len({c.name for c in candidates}) == 1:
        best = min(_ORIGIN_RANK.get(c.origin, 9) for c in candidates)
        top = [c for c in candidates if _ORIGIN_RANK.get(c.origin, 9) == best]
        if len(top) == 1:
            return top[0]
        candidates = top
    shown = "; ".join(_describe(c) for c in candidates[:6])
    more = f" and {len(candidates) - 6} more" if len(candidates) > 6 else ""
    raise ModelError(
        name,
        f"ambiguous: {len(candidates)} models match: {shown}{more}; "
        "give the full name or the folder path",
    )


def _similarity(needle: str, name: str) -> float:
    """How close a typed name is to a catalog name (case-insensitive).

    The part after `org/` counts most, as people remember the model, not the
    uploader; a matching org or a contained name adds to it.
    """
    org, _, tail = needle.rpartition("/")
    name_org, _, name_tail = name.casefold().rpartition("/")
    score = difflib.SequenceMatcher(None, tail, name_tail).ratio()
    if org and org == name_org:
        score += 0.15
    squashed = _squash(tail)
    if squashed and squashed in _squash(name_tail):  # `phi3` finds `Phi-3-mini-4k-instruct`
        score += 1.0
    return score


def _squash(text: str) -> str:
    return "".join(c for c in text if c.isalnum())


def closest_names(name: str, names: Iterable[str], limit: int = 4) -> list[str]:
    """Up to `limit` catalog names closest to `name`, best first."""
    needle = name.casefold()
    scored = sorted(((_similarity(needle, n), n) for n in set(names)), key=lambda t: (-t[0], t[1]))
    return [n for score, n in scored if score >= 0.6][:limit]


def match_entry(catalog: Catalog, name: str) -> CatalogEntry:
    """The entry a name picks in a catalog built already.

    Tiers, first that matches wins: the exact name; the name ignoring case; the
    part after the `org/` ignoring case (`Qwen3-30B-A3B-4bit`). Within a tier,
    entries of one name resolve to real files before a profile (HF cache, then
    folder, then built-in); different names are ambiguous. Raises
    ModelNotFoundError (with the closest names) or ModelError (ambiguous, skipped).
    """
    folded = name.casefold()
    tiers: list[Callable[[CatalogEntry], bool]] = [
        lambda e: e.name == name,
        lambda e: e.name.casefold() == folded,
        lambda e: "/" not in name and e.name.casefold().rsplit("/", 1)[-1] == folded,
    ]
    for tier in tiers:
        found = _pick(name, [e for e in catalog.entries if tier(e)])
        if found is not None:
            return found
    for item in catalog.skipped:
        if item.name is not None and item.name.casefold() == folded:
            raise ModelError(name, f"found at {item.location} but not usable: {item.reason}")
    raise ModelNotFoundError(name, _not_found_message(catalog, name))


def _not_found_message(catalog: Catalog, name: str) -> str:
    places = ["not a folder", "not a built-in profile"]
    if catalog.hf_cache_dir is not None:
        places.append(f"not in the HF cache ({catalog.hf_cache_dir})")
    if catalog.models_dirs:
        places.append(f"not in {', '.join(str(d) for d in catalog.models_dirs)}")
    message = "no such model: " + ", ".join(places)
    close = closest_names(name, (e.name for e in catalog.entries))
    if close:
        message += f"; closest: {', '.join(close)}"
    if name.count("/") == 1 and not name.startswith("/"):
        message += f"; vramscope never downloads: get it with `hf download {name}`, then retry"
    else:
        message += "; `vramscope models` lists every name"
    return message


def resolve_entry(
    name: str,
    models_dirs: Sequence[Path | str] = (),
    *,
    hf_cache_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> CatalogEntry:
    """The entry a MODEL argument names: a folder path, a profile name or a cached repo id.

    An existing path always wins and is read as a folder (ModelError if it is not
    one). Otherwise the name is matched against the catalog (see `match_entry`).
    """
    if not name.strip():
        raise ModelNotFoundError(
            repr(name), "empty model name; `vramscope models` lists every name"
        )
    path = _existing_path(name)
    if path is not None:
        return folder_entry(path, name)
    if _path_like(name):
        raise ModelNotFoundError(name, "no such file or folder")
    dirs = _all_models_dirs(models_dirs, env)
    cache = Path(hf_cache_dir) if hf_cache_dir is not None else hf_cache_dir_or_none(env)
    # Fast paths for exact names, which win whatever else the catalog holds: a repo
    # in the HF cache (read alone, not the whole cache), then a profile when there
    # are no folders to search.
    if cache is not None and name.count("/") == 1:
        for model in scan_hf_cache_repo(cache, name).models:
            found = _cached_model_entry(model)
            if isinstance(found, CatalogEntry):
                return found
    no_cached_copy = cache is None or not _exists(cache / repo_folder_name(name))
    if not dirs and no_cached_copy and name in list_profile_ids():
        return profile_entry(name)
    catalog = build_catalog(dirs, hf_cache_dir=cache, include_hf_cache=cache is not None, env=env)
    return match_entry(catalog, name)


def entry_snapshot(entry: CatalogEntry, display: str | None = None) -> ModelSnapshot:
    """Read the model behind an entry (profile data or the folder on disk)."""
    if entry.profile_id is not None:
        return profile_snapshot(load_profile(entry.profile_id), display or entry.name)
    if entry.path is None:
        raise ModelError(entry.name, "catalog entry has neither a profile nor a folder")
    return read_model_dir(entry.path, display or entry.name)


def resolve_model(
    name: str,
    models_dirs: Sequence[Path | str] = (),
    *,
    hf_cache_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelSnapshot:
    """Read the model a MODEL argument names (display = the name as typed).

    A folder path goes straight to `read_model_dir`, so its file-fault warnings
    surface exactly as for any folder.
    """
    path = _existing_path(name)
    if path is not None:
        return read_model_dir(path, name)
    entry = resolve_entry(name, models_dirs, hf_cache_dir=hf_cache_dir, env=env)
    return entry_snapshot(entry, name)
