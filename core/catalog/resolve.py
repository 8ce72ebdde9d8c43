"""The model catalog: built-in profiles, the Hugging Face cache and model folders.

One way to name a model everywhere: a folder path, a built-in profile name
(`mlx-community/Meta-Llama-3.1-8B-Instruct-4bit`), a repo id in the local HF
cache, or a model folder's name inside a `--models-dir` folder. Nothing here
reaches the network, and `build_catalog` never raises: whatever cannot be read
becomes a `SkippedModel` with its reason, so a UI can build the catalog in a
worker thread and always get an answer.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from core.catalog.disk_cache import catalog_cache
from core.catalog.entry import (
    ORIGIN_BUILTIN,
    ORIGIN_FOLDER,
    ORIGIN_HF_CACHE,
    ORIGIN_HUB,
    Catalog,
    CatalogEntry,
    SkippedModel,
)
from core.catalog.hf_cache import scan_hf_cache_repo
from core.catalog.model_dir import read_model_dir
from core.catalog.profiles import list_profile_ids, load_profile, profile_snapshot
from core.catalog.sources import (
    cached_model_entry,
    folder_entry,
    hf_cache_entries,
    hub_store_entries,
    models_dir_entries,
    path_exists,
    profile_entry,
)
from core.errors import (
    HubNotFoundError,
    ModelError,
    ModelNotFoundError,
    NoHomeError,
)
from core.estimate.snapshot import ModelSnapshot
from core.estimate.weights import WeightsSource
from core.paths import (
    hf_cache_dir,
    hub_store_dir_or_none,
    models_dirs_from_env,
    repo_folder_name,
)

if TYPE_CHECKING:
    from core.hub.remote import HubOptions, HubRead

# When several entries share a name, the one with real files wins over the profile.
# A Hub copy is headers only, like a profile, and read only for names nothing else has.
_ORIGIN_RANK = {ORIGIN_HF_CACHE: 0, ORIGIN_FOLDER: 1, ORIGIN_BUILTIN: 2, ORIGIN_HUB: 3}

__all__ = [
    "ORIGIN_BUILTIN",
    "ORIGIN_FOLDER",
    "ORIGIN_HF_CACHE",
    "ORIGIN_HUB",
    "Catalog",
    "CatalogEntry",
    "SkippedModel",
    "build_catalog",
    "closest_names",
    "entry_snapshot",
    "folder_entry",
    "match_entry",
    "profile_entry",
    "resolve_entry",
    "resolve_model",
]


# --- The catalog -------------------------------------------------------------------------


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
    rank = {ORIGIN_FOLDER: 0, ORIGIN_HF_CACHE: 1, ORIGIN_HUB: 2, ORIGIN_BUILTIN: 3}.get(
        entry.origin, 4
    )
    return (rank, entry.name.casefold(), str(entry.path or ""))


def build_catalog(
    models_dirs: Sequence[Path | str] = (),
    *,
    hf_cache_dir: Path | str | None = None,
    include_profiles: bool = True,
    include_hf_cache: bool = True,
    env: Mapping[str, str] | None = None,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    include_hub: bool = True,
) -> Catalog:
    """Every model vramscope can name: folders, the HF cache, built-in profiles.

    `models_dirs` come before VRAMSCOPE_MODELS_DIR; `hf_cache_dir` defaults to the
    folder huggingface_hub would use under `env` (default os.environ). Entries of
    unchanged folders come from the on-disk cache (`core.catalog.disk_cache`, in
    `cache_dir`, default `$XDG_CACHE_HOME/vramscope`) unless `use_cache` is False.
    Repos read from the Hub before come from the vramscope Hub store (no network)
    unless `include_hub` is False. Never raises.
    """
    notices: list[str] = []
    with catalog_cache(use_cache, cache_dir, notices):
        catalog = _build_catalog(
            models_dirs, hf_cache_dir, include_profiles, include_hf_cache, include_hub, env
        )
    return dataclasses.replace(catalog, notices=tuple(notices)) if notices else catalog


def _build_catalog(
    models_dirs: Sequence[Path | str],
    hf_cache_dir: Path | str | None,
    include_profiles: bool,
    include_hf_cache: bool,
    include_hub: bool,
    env: Mapping[str, str] | None,
) -> Catalog:
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
    root = hub_store_dir_or_none(env) if include_hub else None
    if root is not None:  # None: an environment handed in that names no home
        found, left = _guarded(str(root), partial(hub_store_entries, root))
        entries.extend(found)
        skipped.extend(left)
    if include_profiles:
        for repo_id in list_profile_ids():
            found, left = _guarded(repo_id, partial(_profile_entries, repo_id))
            entries.extend(found)
            skipped.extend(left)
    # A Hub read leaves config.json (and the index) in the HF cache: that copy has no
    # headers, so the stored Hub copy of the same repo answers instead.
    from_hub = {e.name for e in entries if e.origin == ORIGIN_HUB}
    entries = [e for e in entries if not (e.name in from_hub and _partial_copy(e))]
    unique: dict[str, CatalogEntry] = {}
    for entry in entries:  # the same folder reached twice (a link, two roots) is listed once
        key = _real(entry.path) if entry.path else f"profile:{entry.profile_id}"
        unique.setdefault(key, entry)
    return Catalog(
        tuple(sorted(unique.values(), key=_sort_key)), tuple(skipped), cache, tuple(dirs)
    )


def _partial_copy(entry: CatalogEntry) -> bool:
    """An HF cache snapshot with a config but no safetensors: not the whole model."""
    return (
        entry.origin == ORIGIN_HF_CACHE
        and entry.weights_source is not WeightsSource.SAFETENSORS_HEADER
    )


def _profile_entries(repo_id: str) -> tuple[list[CatalogEntry], list[SkippedModel]]:
    return [profile_entry(repo_id)], []


def hf_cache_dir_or_none(env: Mapping[str, str] | None = None) -> Path | None:
    """The HF cache folder from the environment (None if it cannot be worked out, or
    an environment handed in names no home)."""
    try:
        return hf_cache_dir(env)
    except (OSError, ValueError, RuntimeError, NoHomeError):
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
    try:  # `~\x00` asks the password database for a user with a NUL: ValueError
        path = Path(os.path.expanduser(name)) if name.startswith("~") else Path(name)
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
    raise ModelNotFoundError(_shown(name), _not_found_message(catalog, name))


def _shown(name: str) -> str:
    """A name as typed, escaped where it holds control characters (never shown stripped)."""
    return name if name.isprintable() else ascii(name)


def _not_found_message(catalog: Catalog, name: str, hub: str | None = None) -> str:
    """Where the name was looked for, the closest names, and how to get it.

    `hub` says what the Hub said (or why it was not asked); None when the caller
    never reads the Hub.
    """
    places = ["not a folder", "not a built-in profile"]
    if catalog.hf_cache_dir is not None:
        places.append(f"not in the HF cache ({catalog.hf_cache_dir})")
    if catalog.models_dirs:
        places.append(f"not in {', '.join(str(d) for d in catalog.models_dirs)}")
    if hub is not None:
        places.append(hub)
    message = "no such model: " + ", ".join(places)
    close = closest_names(name, (e.name for e in catalog.entries))
    if close:
        message += f"; closest: {', '.join(close)}"
    if hub is not None and "the Hub is off" in hub:
        message += "; drop --offline / HF_HUB_OFFLINE to read it from the Hub"
    elif name.count("/") == 1 and not _is_repo_id(name):
        from core.hub.store import REPO_ID_RULE

        message += f"; not a Hub repo id either ({REPO_ID_RULE})"
    elif hub is None and name.count("/") == 1 and not name.startswith("/"):
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
    hub: HubOptions | None = None,
) -> CatalogEntry:
    """The entry a MODEL argument names: a folder path, a profile name or a cached repo id.

    An existing path always wins and is read as a folder (ModelError if it is not
    one). Otherwise the name is matched against the catalog (see `match_entry`).
    With `hub` options, a repo id that names nothing local (or only an unfinished
    download, or a copy read from the Hub before) is read from the Hub
    (`core.hub.remote`); without them the network is never touched.
    """
    return _resolve(name, models_dirs, hf_cache_dir, env, hub)[0]


def _resolve(
    name: str,
    models_dirs: Sequence[Path | str],
    hf_cache_dir: Path | str | None,
    env: Mapping[str, str] | None,
    hub: HubOptions | None,
) -> tuple[CatalogEntry, HubRead | None]:
    if not name.strip():
        raise ModelNotFoundError(
            repr(name), "empty model name; `vramscope models` lists every name"
        )
    path = _existing_path(name)
    if path is not None:
        return folder_entry(path, name), None
    if _path_like(name):
        raise ModelNotFoundError(name, "no such file or folder")
    dirs = _all_models_dirs(models_dirs, env)
    cache = Path(hf_cache_dir) if hf_cache_dir is not None else hf_cache_dir_or_none(env)
    # Fast paths for exact names, which win whatever else the catalog holds: a repo
    # in the HF cache (read alone, not the whole cache), then a profile when there
    # are no folders to search.
    if cache is not None and name.count("/") == 1:
        for model in scan_hf_cache_repo(cache, name).models:
            found = cached_model_entry(model)
            if isinstance(found, CatalogEntry) and not (hub and _partial_copy(found)):
                return found, None
    no_cached_copy = cache is None or not path_exists(cache / repo_folder_name(name))
    if not dirs and no_cached_copy and name in list_profile_ids():
        return profile_entry(name), None
    catalog = build_catalog(dirs, hf_cache_dir=cache, include_hf_cache=cache is not None, env=env)
    try:
        entry = match_entry(catalog, name)
    except ModelNotFoundError as exc:
        if hub is None or not _is_repo_id(name):
            raise
        local: ModelError = exc
        entry = None
    except ModelError as exc:  # only an unusable local copy (an index-only snapshot)
        if hub is None or not _is_repo_id(name) or "ambiguous" in exc.problem:
            raise
        local = exc
        entry = None
    if entry is not None and hub is not None and entry.name == name and _partial_copy(entry):
        # config.json without headers (an unfinished download): never the answer while
        # the Hub can be asked; if it cannot, this reason is the error
        local = ModelError(
            name,
            f"the HF cache copy at {entry.path} has no safetensors headers (an unfinished "
            f"download; finish it with `hf download {name}`) and the Hub read failed",
        )
        entry = None
    if entry is not None and (entry.origin != ORIGIN_HUB or hub is None or entry.name != name):
        return entry, None
    assert hub is not None
    return _from_hub(name, catalog, hub, env, local if entry is None else None)


def _is_repo_id(name: str) -> bool:
    # core.hub is imported only when a name may be read from the Hub: a model read
    # from a folder, the HF cache or a profile (the explorer's first) never needs it.
    from core.hub.store import is_repo_id

    return is_repo_id(name)


def _from_hub(
    name: str,
    catalog: Catalog,
    hub: HubOptions,
    env: Mapping[str, str] | None,
    local: ModelError | None,
) -> tuple[CatalogEntry, HubRead]:
    """Read `name` from the Hub (or its stored copy) and list it as a `hub` entry."""
    from core.hub.remote import read_hub_model
    from core.hub.session import hub_offline_reason

    try:
        read = read_hub_model(name, hub, env)
    except HubNotFoundError as exc:
        if local is not None and not isinstance(local, ModelNotFoundError):
            raise local from None  # the local copy's reason says more than the Hub's
        off = "--offline" if hub.offline else hub_offline_reason(env)
        said = f"the Hub is off ({off}) and it was never read" if off else exc.problem
        raise ModelNotFoundError(name, _not_found_message(catalog, name, said)) from None
    for entry in hub_store_entries(read.path.parent.parent.parent)[0]:
        if entry.name == name and entry.path == read.path:
            return entry, read
    found = _listed_hub_entry(read)
    return found, read


def _listed_hub_entry(read: HubRead) -> CatalogEntry:
    """The entry of a stored snapshot that `refs/main` does not name (a --revision read)."""
    from core.catalog.sources import _listed_model

    result = _listed_model(read.path, read.repo_id, ORIGIN_HUB, revision=read.commit)
    if isinstance(result, CatalogEntry):
        return result
    raise ModelError(
        read.repo_id, f"read from the Hub at {read.commit[:12]} but not usable: {result.reason}"
    )


def hub_read_entry(repo_id: str, commit: str, path: Path) -> CatalogEntry:
    """The entry of a Hub store snapshot, as `inspect REPO` lists it (`fit --hub`)."""
    from core.catalog.sources import _listed_model

    result = _listed_model(path, repo_id, ORIGIN_HUB, revision=commit)
    if isinstance(result, CatalogEntry):
        return result
    raise ModelError(repo_id, f"read from the Hub at {commit[:12]} but not usable: {result.reason}")


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
    hub: HubOptions | None = None,
) -> ModelSnapshot:
    """Read the model a MODEL argument names (display = the name as typed).

    A folder path goes straight to `read_model_dir`, so its file-fault warnings
    surface exactly as for any folder. A model read from the Hub (see
    `resolve_entry`) carries its `source` and any offline note.
    """
    return resolve_model_entry(name, models_dirs, hf_cache_dir=hf_cache_dir, env=env, hub=hub)[0]


def resolve_model_entry(
    name: str,
    models_dirs: Sequence[Path | str] = (),
    *,
    hf_cache_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    hub: HubOptions | None = None,
) -> tuple[ModelSnapshot, CatalogEntry | None]:
    """`resolve_model`, and the catalog entry it read (None for a folder path, whose
    snapshot is the folder's own read)."""
    path = _existing_path(name)
    if path is not None:
        return read_model_dir(path, name), None
    entry, read = _resolve(name, models_dirs, hf_cache_dir, env, hub)
    snap = entry_snapshot(entry, name)
    if entry.origin == ORIGIN_HUB and entry.revision:
        source = read.source if read is not None else f"Hugging Face Hub @ {entry.revision}"
        notes = (read.note,) if read is not None and read.note else ()
        snap = dataclasses.replace(snap, source=source, notes=notes)
    return snap, entry
