"""Catalog entries read for `vramscope fit`: the snapshot and the what-if weights.

A folder's what-ifs need every tensor of its headers (18,867 for a 128-expert
model), so they are kept in `$XDG_CACHE_HOME/vramscope/fit.json` by the identity of
the files they came from (`core.catalog.disk_cache`: same rules as the catalog's).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.answer.fit import FitModel, Tensor, what_if_weights
from core.answer.quantization import Quantization
from core.answer.quantize import SCHEMES
from core.answer.question import ModelFacts
from core.catalog.disk_cache import CatalogCache
from core.catalog.entry import ORIGIN_BUILTIN, ORIGIN_HUB, Catalog, CatalogEntry
from core.catalog.profiles import PROFILE_DIR, load_profile, profile_file_name
from core.catalog.resolve import entry_snapshot
from core.display_text import clean_text
from core.errors import FileFault, describe_os_error
from core.estimate.snapshot import ModelSnapshot, snapshot_from_config
from core.estimate.weights import WeightsTerm
from core.model.config import ModelConfig, load_config
from core.model.tensor_list import folder_identity, folder_tensors
from core.paths import cache_dir

FIT_CACHE_FILE = "fit.json"


def entry_where(entry: CatalogEntry) -> str:
    """Where the model was read from, as `vramscope models` says it."""
    if entry.origin == ORIGIN_BUILTIN:
        return "built-in profile"
    return f"{entry.origin_label}: {entry.path}"


def _tensors(entry: CatalogEntry) -> tuple[list[Tensor] | None, str | None]:
    return _tensors_at(entry.profile_id, entry.path)


def _tensors_at(
    profile_id: str | None, path: Path | None
) -> tuple[list[Tensor] | None, str | None]:
    if profile_id is not None:
        tensors = load_profile(profile_id).tensors
        if tensors is None:
            return None, "the built-in profile has no tensor list (config only)"
        return list(tensors), None
    if path is None:
        return None, "no model folder"
    try:
        found = folder_tensors(path)
    except FileFault as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"{path}: {describe_os_error(exc)}"
    if not found:
        return None, f"{path}: no model*.safetensors files (what mlx-lm loads)"
    return found, None


def _cache_key(entry: CatalogEntry) -> tuple[str, object | None]:
    """The what-if cache's key and identity for an entry (identity None: do not cache)."""
    if entry.profile_id is not None:
        try:
            st = (PROFILE_DIR / profile_file_name(entry.profile_id)).stat()
        except OSError:
            return "", None
        return f"fit-profile:{entry.profile_id}", (st.st_size, st.st_mtime_ns)
    if entry.path is None:
        return "", None
    return f"fit:{os.path.realpath(entry.path)}", folder_identity(entry.path)


def _snapshot(entry: CatalogEntry) -> ModelSnapshot:
    """The snapshot `inspect` would read, without parsing a folder's index a second time.

    A folder entry's weights are already `read_model_dir`'s (the catalog reads them the
    same way), so only the config is read again; any fault goes the long way round.
    """
    if entry.path is not None:
        try:
            config = load_config(entry.path)
        except FileFault:
            return entry_snapshot(entry)
        weights = WeightsTerm(entry.weight_bytes, entry.weights_source)
        return snapshot_from_config(entry.name, config, weights)
    return entry_snapshot(entry)


class FitReader:
    """Reads entries into `FitModel`s, with the what-ifs of folders cached on disk."""

    def __init__(self, disk: CatalogCache | None) -> None:
        self.disk = disk

    def _what_ifs(self, entry: CatalogEntry, config: ModelConfig | None) -> dict[str, int | str]:
        root = config.root if config is not None else None
        key, identity = _cache_key(entry)
        if self.disk is not None and identity is not None:
            stored = self.disk.get_json(key, identity)
            if isinstance(stored, dict) and set(stored) == set(SCHEMES):
                return {k: v for k, v in stored.items() if isinstance(v, int | str)}
        tensors, problem = _tensors(entry)
        result = what_if_weights(tensors, root, SCHEMES, problem)
        # A folder that could not be read is read again next time: a fixed permission
        # changes no mtime, so its identity would not tell.
        if self.disk is not None and identity is not None and problem is None:
            self.disk.put_json(key, identity, result)
        return result

    def read(self, entry: CatalogEntry, *, what_ifs_too: bool = True) -> FitModel:
        """Read one entry (raises VramscopeError when the folder cannot be read at all);
        without `what_ifs_too` the tensor lists are not read."""
        snapshot = _snapshot(entry)
        what_ifs = self._what_ifs(entry, snapshot.config) if what_ifs_too else {}
        return FitModel(
            facts=ModelFacts(
                snapshot,
                clean_text(entry.name),
                {
                    Quantization.named(k): clean_text(v) if isinstance(v, str) else v
                    for k, v in what_ifs.items()
                },
            ),
            where=clean_text(entry_where(entry)),
            format_label=clean_text(entry.format_label),
            warnings=tuple(clean_text(w) for w in entry.warnings),
        )


def stored_what_ifs(
    snapshot: ModelSnapshot, entry: CatalogEntry | None, path: Path | None = None
) -> dict[Quantization, int | str]:
    """The what-ifs' weights of one model `inspect` read (an entry, or a folder path),
    as `fit` computes them (not cached: one model, read when its advice needs them)."""
    profile_id, folder = (entry.profile_id, entry.path) if entry is not None else (None, path)
    if profile_id is None and folder is None:
        return {}
    tensors, problem = _tensors_at(profile_id, folder)
    root = snapshot.config.root if snapshot.config is not None else None
    found = what_if_weights(tensors, root, SCHEMES, problem)
    return {
        Quantization.named(k): clean_text(v) if isinstance(v, str) else v for k, v in found.items()
    }


@contextmanager
def fit_reader(
    use_cache: bool = True, directory: Path | None = None, notices: list[str] | None = None
) -> Iterator[FitReader]:
    """A reader whose what-if cache is saved when the block ends (and `notices` told
    where an unreadable cache file was kept aside)."""
    disk = CatalogCache((directory or cache_dir()) / FIT_CACHE_FILE) if use_cache else None
    try:
        yield FitReader(disk)
    finally:
        if disk is not None:
            disk.save()
            if disk.kept is not None and notices is not None:
                notices.append(disk.kept)


def fit_entries(catalog: Catalog) -> tuple[CatalogEntry, ...]:
    """The entries `fit` and the Fits view rank: a built-in profile whose repo the Hub
    store also holds is one model with it, answered from the stored real headers."""
    from_hub = {e.name for e in catalog.entries if e.origin == ORIGIN_HUB}
    return tuple(
        e for e in catalog.entries if not (e.origin == ORIGIN_BUILTIN and e.name in from_hub)
    )


def skipped_lines(catalog: Catalog) -> list[str]:
    """What the catalog left out, one line each, as `vramscope models --verbose` says it:
    `fit` and the Fits view list them beside their rows."""
    return [clean_text(f"{s.location}: {s.reason}") for s in catalog.skipped]


def read_fit_model(entry: CatalogEntry) -> FitModel:
    """One entry, without the disk cache."""
    return FitReader(None).read(entry)
