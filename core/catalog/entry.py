"""What the catalog lists: one entry per model, what was skipped, and the whole list.

Plain data shared by the catalog's sources (`core.catalog.sources`) and its
users (the `models` command, the explorer, the measurement launcher).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.estimate.kv_cache import KvKind
from core.estimate.weights import WeightsSource
from core.kind import Kind


class EntryOrigin(Kind):
    """Where a catalog entry came from (the value is the word `models --json` writes)."""

    BUILTIN = "built-in"
    HF_CACHE = "hf-cache"
    FOLDER = "folder"
    HUB = "hub"
    """Read from the Hugging Face Hub (headers only), kept in the vramscope Hub store."""
    GGUF = "gguf"
    """A GGUF file (llama.cpp's) in a models folder or the HF cache: the explorer's list
    shows it beside the catalog's models, and picking it reads it as `inspect FILE` does."""


ORIGIN_BUILTIN = EntryOrigin.BUILTIN
ORIGIN_HF_CACHE = EntryOrigin.HF_CACHE
ORIGIN_FOLDER = EntryOrigin.FOLDER
ORIGIN_HUB = EntryOrigin.HUB
ORIGIN_GGUF = EntryOrigin.GGUF


@dataclass(frozen=True)
class CatalogEntry:
    """One model the user can pick, with what the list shows about it."""

    name: str
    """Display name: the repo id for profiles and cache entries, the folder name otherwise."""
    origin: EntryOrigin
    """Built-in, the HF cache, a folder or the Hub (a word is taken, and made the kind)."""
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
    warnings: tuple[str, ...] = ()
    """What was wrong with the folder's files (the estimate's warning lines)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "origin", EntryOrigin.named(self.origin))

    @property
    def origin_label(self) -> str:
        """Where it came from, for display."""
        if self.origin == ORIGIN_HF_CACHE and self.revision:
            at = f"{self.refs[0]} " if self.refs else ""
            return f"HF cache @ {at}{self.revision[:8]}"
        if self.origin == ORIGIN_HUB and self.revision:
            at = f"{self.refs[0]} " if self.refs else ""
            return f"hub @ {at}{self.revision[:8]}"
        labels = {ORIGIN_BUILTIN: "built-in profile", ORIGIN_FOLDER: "folder", ORIGIN_GGUF: "GGUF"}
        return labels.get(self.origin, self.origin.value)


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
    notices: tuple[str, ...] = ()
    """Lines for stderr about the stores read (an unreadable cache file kept aside)."""
