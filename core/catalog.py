"""The model catalog: built-in profiles, the Hugging Face cache and model folders.

One way to name a model everywhere: a folder path, a built-in profile name
(`mlx-community/Meta-Llama-3.1-8B-Instruct-4bit`) or a repo id in the local HF
cache. Nothing here reaches the network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import ModelNotFoundError
from core.kv_cache import KvKind
from core.model import ModelSnapshot, read_model_dir
from core.profiles import list_profile_ids, load_profile, profile_snapshot
from core.weights import WeightsSource

ORIGIN_BUILTIN = "built-in"
ORIGIN_HF_CACHE = "hf-cache"
ORIGIN_FOLDER = "folder"


@dataclass(frozen=True)
class CatalogEntry:
    """One model the user can pick, with what the list shows about it."""

    name: str
    """Display name: the repo id for profiles and cache entries, the folder name otherwise."""
    origin: str
    """`built-in`, `hf-cache` or `folder`."""
    format_label: str
    """E.g. `MLX 4-bit g64`, `BF16`, `GPTQ 4-bit`."""
    weight_bytes: int
    weights_source: WeightsSource
    kv_kind: KvKind | None
    max_position_embeddings: int | None
    weights_on_disk: bool
    """True when real weight data is present (needed to measure with real weights)."""
    path: Path | None = None
    """The model folder (snapshot folder for HF cache entries); None for profiles."""
    revision: str | None = None
    """HF cache commit hash (and ref names) for cache entries."""
    profile_id: str | None = None

    @property
    def origin_label(self) -> str:
        """Where it came from, for display."""
        if self.origin == ORIGIN_HF_CACHE and self.revision:
            return f"HF cache @ {self.revision[:8]}"
        return {ORIGIN_BUILTIN: "built-in profile", ORIGIN_FOLDER: "folder"}.get(
            self.origin, self.origin
        )


@dataclass(frozen=True)
class SkippedModel:
    """Something that looked like a model but was left out, and why."""

    location: str
    reason: str


@dataclass(frozen=True)
class Catalog:
    """Entries in display order plus what was skipped."""

    entries: tuple[CatalogEntry, ...]
    skipped: tuple[SkippedModel, ...] = field(default=())


def entry_snapshot(entry: CatalogEntry, display: str | None = None) -> ModelSnapshot:
    """Read the model behind an entry (profile data or the folder on disk)."""
    if entry.profile_id is not None:
        return profile_snapshot(load_profile(entry.profile_id), display or entry.name)
    assert entry.path is not None
    return read_model_dir(entry.path, display or entry.name)


def profile_entry(repo_id: str) -> CatalogEntry:
    """The catalog entry of a built-in profile."""
    from core.model_format import describe_format

    profile = load_profile(repo_id)
    snap = profile_snapshot(profile)
    return CatalogEntry(
        name=repo_id,
        origin=ORIGIN_BUILTIN,
        format_label=describe_format(profile.config, profile_dtypes(repo_id)),
        weight_bytes=snap.weights.bytes,
        weights_source=snap.weights.source,
        kv_kind=snap.kv_arch.kind if snap.kv_arch else None,
        max_position_embeddings=snap.max_position_embeddings,
        weights_on_disk=False,
        profile_id=repo_id,
    )


def profile_dtypes(repo_id: str) -> dict[str, int]:
    """Tensor count per dtype of a profile."""
    counts: dict[str, int] = {}
    for _, dtype, _ in load_profile(repo_id).tensors or ():
        counts[dtype] = counts.get(dtype, 0) + 1
    return counts


def build_catalog(include_profiles: bool = True) -> Catalog:
    """The catalog (built-in profiles for now)."""
    entries = [profile_entry(r) for r in list_profile_ids()] if include_profiles else []
    return Catalog(tuple(entries))


def folder_entry(path: Path) -> CatalogEntry:
    """The catalog entry of a model folder (reads config and headers)."""
    from core.model_format import describe_format

    snap = read_model_dir(path)
    return CatalogEntry(
        name=path.name,
        origin=ORIGIN_FOLDER,
        format_label=describe_format(snap.config, {}),
        weight_bytes=snap.weights.bytes,
        weights_source=snap.weights.source,
        kv_kind=snap.kv_arch.kind if snap.kv_arch else None,
        max_position_embeddings=snap.max_position_embeddings,
        weights_on_disk=False,
        path=path,
    )


def resolve_entry(name: str, models_dirs: Sequence[Path] = ()) -> CatalogEntry:
    """The entry a MODEL argument names: a folder path, a profile name or a cached repo id.

    Raises ModelNotFoundError (listing the closest names) when nothing matches.
    """
    path = Path(name)
    if path.exists():
        return folder_entry(path)
    if name in list_profile_ids():
        return profile_entry(name)
    raise ModelNotFoundError(name, "not a folder, and no built-in profile has that name")


def resolve_model(name: str, models_dirs: Sequence[Path] = ()) -> ModelSnapshot:
    """Read the model a MODEL argument names (display = the name as typed)."""
    path = Path(name)
    if path.exists():
        return read_model_dir(path, name)
    return entry_snapshot(resolve_entry(name, models_dirs), name)
