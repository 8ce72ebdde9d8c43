"""The local Hugging Face cache, read offline through `huggingface_hub.scan_cache_dir`.

The hub writes `models--org--name/{blobs/<hash>, refs/<ref>, snapshots/<commit>/<file>}`
where each snapshot file is a relative symlink into `blobs/`. A repo can hold
several snapshots; the catalog shows one per repo: the one `refs/main` points
to, else the most recently written. Interrupted downloads leave
`blobs/<hash>.incomplete` behind.

huggingface_hub is imported lazily, inside `scan_hf_cache`, so `import core`
stays light; `HF_HUB_OFFLINE` is set first so nothing it does can reach the
network. The cache folder is computed here from the environment at call time
(huggingface_hub reads it once, at import), and passed explicitly.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.catalog.disk_cache import ACTIVE as ACTIVE_DISK_CACHE
from core.errors import describe_os_error
from core.paths import HF_MODEL_PREFIX, repo_folder_name

IGNORED_ENTRIES = frozenset({".locks", "CACHEDIR.TAG", ".DS_Store", ".gitignore"})


@dataclass(frozen=True)
class CachedModel:
    """One model repo of the cache, at the snapshot the catalog shows."""

    repo_id: str
    repo_path: Path
    snapshot_path: Path
    commit_hash: str
    refs: tuple[str, ...]
    """Ref names pointing at this snapshot (`main`, `refs/pr/2`), sorted."""
    other_revisions: tuple[str, ...] = ()
    incomplete_files: tuple[Path, ...] = ()
    """`blobs/*.incomplete` left by an unfinished download of this repo."""


@dataclass(frozen=True)
class CacheProblem:
    """A cache entry that could not be read as a model repo, and why."""

    location: str
    reason: str
    repo_id: str | None = None


@dataclass(frozen=True)
class CacheScan:
    """What the cache holds: model repos and the entries that were left out."""

    cache_dir: Path
    models: tuple[CachedModel, ...] = ()
    problems: tuple[CacheProblem, ...] = field(default=())
    exists: bool = True


class _UnusableSettings(ImportError):
    """huggingface_hub would raise at import for a setting it cannot parse."""


def _import_hub() -> Any:
    # Offline before the import: the hub reads HF_HUB_OFFLINE once, at import time.
    # The variable is put back afterwards, so the user's own setting still decides
    # whether a Hub read (core.hub.remote) may go online.
    from core.hub.settings import settings_error

    error = settings_error()
    if error is not None and "huggingface_hub" not in sys.modules:
        raise _UnusableSettings(f"{error}; huggingface_hub cannot start, the HF cache is not read")
    unset = "HF_HUB_OFFLINE" not in os.environ
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import huggingface_hub
        from huggingface_hub.utils import _cache_manager
    finally:
        if unset:
            os.environ.pop("HF_HUB_OFFLINE", None)

    return huggingface_hub, _cache_manager


def _pick_revision(revisions: Iterable[Any]) -> tuple[Any, list[Any]]:
    """The snapshot to show (the one `main` points to, else the newest) and the others."""
    ordered = sorted(
        revisions,
        key=lambda r: ("main" in r.refs, bool(r.refs), r.last_modified, r.commit_hash),
        reverse=True,
    )
    return ordered[0], ordered[1:]


def _repo_problem(repo_path: Path, reason: str) -> CacheProblem:
    name = repo_path.name
    repo_id = (
        name[len(HF_MODEL_PREFIX) :].replace("--", "/")
        if name.startswith(HF_MODEL_PREFIX)
        else None
    )
    return CacheProblem(str(repo_path), reason, repo_id)


def _incomplete_by_repo(cache_dir: Path, info: Any) -> dict[Path, list[Path]]:
    """`*.incomplete` blobs keyed by repo folder (from the scan when it reports them)."""
    found: dict[Path, list[Path]] = {}
    files = getattr(info, "incomplete_files", None)
    if files is not None:
        paths = [f.file_path for f in files]
    else:  # huggingface_hub before incomplete_files: the same glob it uses
        paths = list(cache_dir.glob("*/blobs/*.incomplete"))
    for path in paths:
        found.setdefault(Path(path).parent.parent, []).append(Path(path))
    return found


def _convert(repo: Any, incomplete: Mapping[Path, list[Path]]) -> CachedModel | CacheProblem:
    if not repo.revisions:
        return _repo_problem(repo.repo_path, "no snapshot in the cache (download not started)")
    chosen, others = _pick_revision(repo.revisions)
    return CachedModel(
        repo_id=repo.repo_id,
        repo_path=Path(repo.repo_path),
        snapshot_path=Path(chosen.snapshot_path),
        commit_hash=chosen.commit_hash,
        refs=tuple(sorted(chosen.refs)),
        other_revisions=tuple(r.commit_hash for r in others),
        incomplete_files=tuple(sorted(incomplete.get(Path(repo.repo_path), ()))),
    )


def _scan_repo_by_repo(cache_dir: Path, cache_manager: Any) -> tuple[list[Any], list[CacheProblem]]:
    """The fallback when the whole-cache scan raised: one repo at a time, each contained.

    `scan_cache_dir` turns only `CorruptedCacheException` into a warning; a folder
    it cannot list (permissions, a symlink loop) raises out of the whole scan.
    """
    repos: list[Any] = []
    problems: list[CacheProblem] = []
    try:
        entries = sorted(os.scandir(cache_dir), key=lambda e: e.name)
    except OSError as exc:
        return [], [
            CacheProblem(str(cache_dir), f"cannot list the cache: {describe_os_error(exc)}")
        ]
    for entry in entries:
        if entry.name in IGNORED_ENTRIES or entry.name.startswith("."):
            continue
        path = Path(entry.path)
        try:
            repos.append(cache_manager._scan_cached_repo(path))
        except OSError as exc:
            problems.append(_repo_problem(path, f"cannot read: {describe_os_error(exc)}"))
        except Exception as exc:  # anything the hub raises for one repo stays with that repo
            problems.append(_repo_problem(path, str(exc) or type(exc).__name__))
    return repos, problems


def repo_identity(repo_path: Path) -> list[object] | None:
    """What a repo's scan depends on, read with a few stats and listings (no file reads).

    The hub adds, removes and repoints entries by renaming and linking, which changes
    the mtime of the folder holding them: the repo folder, `refs/` (and each ref
    file's own stat), every folder under `snapshots/`, and `blobs/` (where partial
    downloads appear). None when the repo cannot be read this way.
    """
    parts: list[object] = []
    try:
        for sub in ("", "refs", "blobs"):
            try:
                st = os.stat(os.path.join(repo_path, sub))
            except FileNotFoundError:
                parts.append((sub, None))
                continue
            parts.append((sub, st.st_ino, st.st_mtime_ns))
        for folder in ("refs", "snapshots"):
            for dirpath, dirnames, filenames in os.walk(os.path.join(repo_path, folder)):
                dirnames.sort()
                st = os.stat(dirpath)
                parts.append((dirpath, st.st_ino, st.st_mtime_ns))
                if folder == "refs":
                    for name in sorted(filenames):
                        fst = os.stat(os.path.join(dirpath, name))
                        parts.append((name, fst.st_ino, fst.st_size, fst.st_mtime_ns))
    except OSError:
        return None
    return parts


def _model_to_json(item: CachedModel | CacheProblem) -> dict[str, Any]:
    if isinstance(item, CacheProblem):
        return {"problem": [item.location, item.reason, item.repo_id]}
    return {
        "model": [
            item.repo_id,
            os.fsdecode(item.repo_path),
            os.fsdecode(item.snapshot_path),
            item.commit_hash,
            list(item.refs),
            list(item.other_revisions),
            [os.fsdecode(p) for p in item.incomplete_files],
        ]
    }


def _model_from_json(data: Any) -> CachedModel | CacheProblem | None:
    try:
        if "problem" in data:
            location, reason, repo_id = data["problem"]
            return CacheProblem(str(location), str(reason), repo_id)
        repo_id, repo, snap, commit, refs, others, partial = data["model"]
        return CachedModel(
            str(repo_id),
            Path(repo),
            Path(snap),
            str(commit),
            tuple(refs),
            tuple(others),
            tuple(Path(p) for p in partial),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _scan_with_disk_cache(cache_dir: Path, cache_manager: Any, disk: Any) -> CacheScan:
    """`scan_hf_cache` repo by repo, reusing the results of repos that did not change."""
    try:
        entries = sorted(os.scandir(cache_dir), key=lambda e: e.name)
    except OSError as exc:
        reason = f"cannot list the cache: {describe_os_error(exc)}"
        return CacheScan(cache_dir, problems=(CacheProblem(str(cache_dir), reason),))
    models: list[CachedModel] = []
    problems: list[CacheProblem] = []
    for entry in entries:
        if entry.name in IGNORED_ENTRIES or entry.name.startswith("."):
            continue
        path = Path(entry.path)
        identity = repo_identity(path)
        key = "hf-repo:" + json.dumps(os.fsdecode(path))
        item = _model_from_json(disk.get_json(key, identity)) if identity is not None else None
        if item is None:
            item = _scan_one(cache_dir, path, cache_manager)
            if identity is not None:
                disk.put_json(key, identity, _model_to_json(item))
        if isinstance(item, CachedModel):
            models.append(item)
        else:
            problems.append(item)
    return CacheScan(cache_dir, tuple(sorted(models, key=lambda m: m.repo_id)), tuple(problems))


def _scan_one(cache_dir: Path, path: Path, cache_manager: Any) -> CachedModel | CacheProblem:
    """One repo folder through the hub's own per-repo scan, as the whole scan reads it."""
    try:
        repo = cache_manager._scan_cached_repo(path)
    except OSError as exc:
        return _repo_problem(path, f"cannot read: {describe_os_error(exc)}")
    except Exception as exc:  # the hub's CorruptedCacheException: a warning of the scan
        return _problem_from_warning(cache_dir, exc)
    if repo.repo_type != "model":
        return CacheProblem(str(repo.repo_path), f"a {repo.repo_type} repo, not a model")
    try:
        partial = sorted((path / "blobs").glob("*.incomplete"))
    except OSError:
        partial = []
    return _convert(repo, {Path(repo.repo_path): partial})


def scan_hf_cache(cache_dir: Path) -> CacheScan:
    """Every model repo in the cache at `cache_dir`; never raises, never goes online.

    Inside `core.catalog.disk_cache.catalog_cache`, repos whose folders did not change
    since the last scan are taken from the on-disk cache instead of being walked.
    """
    try:
        if not cache_dir.is_dir():
            return CacheScan(cache_dir, exists=False)
    except OSError:
        return CacheScan(cache_dir, exists=False)
    try:
        hub, cache_manager = _import_hub()
    except _UnusableSettings as exc:
        return CacheScan(cache_dir, problems=(CacheProblem(str(cache_dir), str(exc)),))
    except ImportError as exc:
        reason = f"huggingface_hub is not installed ({exc}); the HF cache is not read"
        return CacheScan(cache_dir, problems=(CacheProblem(str(cache_dir), reason),))
    disk = ACTIVE_DISK_CACHE.get()
    if disk is not None and hasattr(cache_manager, "_scan_cached_repo"):
        return _scan_with_disk_cache(cache_dir, cache_manager, disk)
    problems: list[CacheProblem] = []
    info: Any = None
    try:
        info = hub.scan_cache_dir(cache_dir=cache_dir)
        repos = list(info.repos)
        for warning in info.warnings:
            problems.append(_problem_from_warning(cache_dir, warning))
    except Exception:  # see _scan_repo_by_repo: fall back to one repo at a time
        repos, problems = _scan_repo_by_repo(cache_dir, cache_manager)
    try:
        incomplete = _incomplete_by_repo(cache_dir, info)
    except OSError:
        incomplete = {}
    models: list[CachedModel] = []
    for repo in sorted(repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            problems.append(
                CacheProblem(str(repo.repo_path), f"a {repo.repo_type} repo, not a model")
            )
            continue
        converted = _convert(repo, incomplete)
        if isinstance(converted, CachedModel):
            models.append(converted)
        else:
            problems.append(converted)
    return CacheScan(cache_dir, tuple(models), tuple(problems))


def scan_hf_cache_repo(cache_dir: Path, repo_id: str) -> CacheScan:
    """One model repo of the cache, read as `scan_hf_cache` reads it (never raises).

    Naming a repo id exactly need not scan the whole cache.
    """
    repo_path = cache_dir / repo_folder_name(repo_id)
    try:
        if not repo_path.is_dir():
            return CacheScan(cache_dir, exists=cache_dir.is_dir())
    except OSError:
        return CacheScan(cache_dir, exists=False)
    try:
        _, cache_manager = _import_hub()
        scan_repo = cache_manager._scan_cached_repo
    except (ImportError, AttributeError):  # no per-repo scan in this hub version
        whole = scan_hf_cache(cache_dir)
        return CacheScan(
            cache_dir,
            tuple(m for m in whole.models if m.repo_id == repo_id),
            tuple(p for p in whole.problems if p.repo_id == repo_id),
        )
    try:
        repo = scan_repo(repo_path)
    except OSError as exc:
        return CacheScan(cache_dir, problems=(_repo_problem(repo_path, describe_os_error(exc)),))
    except Exception as exc:  # the hub's CorruptedCacheException and anything else
        return CacheScan(cache_dir, problems=(_problem_from_warning(cache_dir, exc),))
    try:
        incomplete = {repo_path: sorted((repo_path / "blobs").glob("*.incomplete"))}
    except OSError:
        incomplete = {}
    converted = _convert(repo, incomplete)
    if isinstance(converted, CachedModel):
        return CacheScan(cache_dir, (converted,))
    return CacheScan(cache_dir, problems=(converted,))


def _problem_from_warning(cache_dir: Path, warning: Exception) -> CacheProblem:
    """A `CorruptedCacheException` as a problem, attributed to its repo folder when named."""
    text = str(warning)
    repo_path = _repo_path_in(cache_dir, text)
    if repo_path is None:
        return CacheProblem(str(cache_dir), text)
    # Paths inside the repo read better relative to it (the location names the repo).
    text = text.replace(f"{repo_path}{os.sep}", "").replace(f" ({repo_path})", "")
    return _repo_problem(repo_path, text.replace(str(repo_path), "the repo folder").strip())


def _repo_path_in(cache_dir: Path, text: str) -> Path | None:
    """The `models--*` folder a hub message names, if any."""
    marker = str(cache_dir) + os.sep
    start = text.find(marker)
    if start < 0:
        return None
    rest = text[start + len(marker) :]
    name = rest.split(os.sep, 1)[0].rstrip(").,:")
    return cache_dir / name if name else None
