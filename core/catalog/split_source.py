"""The tensor list a per-rank estimate splits: a profile's manifest or a folder's headers.

The single-device estimate only needs byte totals; splitting needs every
tensor's name, dtype and shape, so a folder's safetensors headers are read
(never the data). A folder whose weights term came from anything but headers
(an index with placeholder shards, an analytical count) cannot be split. A Hub repo
is read as `inspect REPO` reads it (its config and headers, kept in the Hub store),
and split from those headers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.catalog.model_dir import read_model_dir
from core.catalog.profiles import load_profile
from core.catalog.resolve import _existing_path, entry_snapshot, resolve_entry
from core.errors import FileFault, ShardingError, VramscopeError
from core.estimate.snapshot import ModelSnapshot
from core.estimate.weights import WeightsSource
from core.model.safetensors_header import parse_header_entries, read_header_json
from core.model.weight_files import INDEX_FILE, read_index_shards
from core.parallel.plan import Tensor

if TYPE_CHECKING:
    from core.hub.remote import HubOptions


def folder_tensors(path: Path, model: ModelSnapshot) -> list[Tensor]:
    """(name, dtype, shape) of every tensor in the files the weights term used."""
    if model.weights.source is not WeightsSource.SAFETENSORS_HEADER:
        raise ShardingError(
            f"{path}: per-rank weights need safetensors headers; the weights term came "
            f"from the {model.weights.source.text_label}"
        )
    files: Sequence[str] = model.weights.files
    if tuple(files) == (INDEX_FILE,):
        try:
            files, _ = read_index_shards(path)
        except FileFault as exc:
            raise ShardingError(f"cannot list the shards: {exc}") from None
    out: list[Tensor] = []
    for name in files:
        try:
            header, _, _ = read_header_json(path / name)
            entries = parse_header_entries(header, path / name)
        except FileFault as exc:
            raise ShardingError(f"per-rank weights need every tensor's shape: {exc}") from None
        out.extend((e.name, e.dtype, e.shape) for e in entries)
    return out


def resolve_parallel_model(
    name: str,
    models_dirs: Sequence[Path | str] = (),
    *,
    hf_cache_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    hub: HubOptions | None = None,
) -> tuple[ModelSnapshot, list[Tensor]]:
    """`resolve_model` plus the tensor list (same name resolution and errors; with
    `hub`, a repo id read from the Hub's headers as `inspect` reads it)."""
    path = _existing_path(name)
    if path is None:
        entry = resolve_entry(name, models_dirs, hf_cache_dir=hf_cache_dir, env=env, hub=hub)
        model = entry_snapshot(entry, name)
        if entry.profile_id is not None:
            tensors = load_profile(entry.profile_id).tensors
            if tensors is None:
                raise ShardingError(f"{name}: a config-only profile has no tensor shapes to split")
            return model, list(tensors)
        if entry.path is None:
            raise ShardingError(f"{name}: no folder to read tensor shapes from")
        path = entry.path
    else:
        model = read_model_dir(path, name)
    return model, folder_tensors(path, model)


def load_tensors(
    name: str, model: ModelSnapshot, models_dirs: Sequence[Path | str] = ()
) -> list[Tensor] | None:
    """The tensor list vramscope's load reads dimensions from (a folder's headers or a
    profile's manifest, found as `resolve_parallel_model` finds them, never online);
    None where there is none, and the load then sizes from config.json and says so."""
    try:
        path = _existing_path(name)
        if path is None:
            entry = resolve_entry(name, models_dirs)
            if entry.profile_id is not None:
                tensors = load_profile(entry.profile_id).tensors
                return None if tensors is None else list(tensors)
            if entry.path is None:
                return None
            path = entry.path
        return folder_tensors(path, model)
    except VramscopeError:
        return None
