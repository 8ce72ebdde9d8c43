"""Catalog entries read for `vramscope fit`: the snapshot and the tensor list."""

from __future__ import annotations

from core.catalog.entry import ORIGIN_BUILTIN, CatalogEntry
from core.catalog.profiles import load_profile
from core.catalog.resolve import entry_snapshot
from core.display_text import clean_text
from core.errors import FileFault, describe_os_error
from core.estimate.fit import FitModel, Tensor
from core.model.tensor_list import folder_tensors


def entry_where(entry: CatalogEntry) -> str:
    """Where the model was read from, as `vramscope models` says it."""
    if entry.origin == ORIGIN_BUILTIN:
        return "built-in profile"
    return f"{entry.origin_label}: {entry.path}"


def _tensors(entry: CatalogEntry) -> tuple[list[Tensor] | None, str | None]:
    if entry.profile_id is not None:
        tensors = load_profile(entry.profile_id).tensors
        if tensors is None:
            return None, "the built-in profile has no tensor list (config only)"
        return list(tensors), None
    if entry.path is None:
        return None, "no model folder"
    try:
        found = folder_tensors(entry.path)
    except FileFault as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"{entry.path}: {describe_os_error(exc)}"
    if not found:
        return None, f"{entry.path}: no model*.safetensors files (what mlx-lm loads)"
    return found, None


def read_fit_model(entry: CatalogEntry) -> FitModel:
    """Read one entry (raises VramscopeError when the folder cannot be read at all)."""
    snapshot = entry_snapshot(entry)
    tensors, problem = _tensors(entry)
    return FitModel(
        name=clean_text(entry.name),
        where=clean_text(entry_where(entry)),
        format_label=clean_text(entry.format_label),
        snapshot=snapshot,
        tensors=tensors,
        tensors_problem=clean_text(problem) if problem else None,
    )
