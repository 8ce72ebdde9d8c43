"""What vramscope reads of a GGUF model: metadata and tensor infos, never tensor data.

The records hold gguf-py's own kinds (`GGMLQuantizationType`, `GGUFValueType`), made
only once a GGUF is read (gguf imports numpy; nothing here imports it at start-up).
Sizes are bytes as llama.cpp's `ggml_nbytes` counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gguf import GGMLQuantizationType, GGUFValueType

SMALL_ARRAY = 4096
"""Arrays of at most this many items keep their values (per-layer head counts, sliding
window patterns); longer ones (a tokenizer's tokens, scores, merges) keep only their
length and item type."""


@dataclass(frozen=True)
class GgufArray:
    """A metadata array: its item type, length, and its values when it is small."""

    item_type: GGUFValueType
    length: int
    values: tuple[int | float | bool | str, ...] | None
    """None when longer than `SMALL_ARRAY` (only the length was kept) or when it is an
    array of arrays."""


GgufValue = int | float | bool | str | GgufArray
"""One metadata value: a scalar as Python holds it, or an array."""


@dataclass(frozen=True)
class GgufTensor:
    """One tensor info: name, ggml type, shape in ggml's order (`ne0` first), the offset
    of its data from the file's data section, and its bytes."""

    name: str
    type: GGMLQuantizationType
    shape: tuple[int, ...]
    offset: int
    nbytes: int

    @property
    def elements(self) -> int:
        """The tensor's element count (1 for an empty shape)."""
        count = 1
        for dim in self.shape:
            count *= dim
        return count


@dataclass(frozen=True)
class GgufFile:
    """One GGUF file's header: everything before the tensor data."""

    path: str
    """The file's path (a local path, or `repo/file` for a Hub file)."""
    file_size: int
    version: int
    alignment: int
    data_offset: int
    """Where the tensor data starts: the header's length, padded to `alignment`."""
    metadata: dict[str, GgufValue] = field(hash=False)
    value_types: dict[str, GGUFValueType] = field(hash=False)
    """Each key's GGUF type (`UINT32`, `ARRAY`...), as written."""
    tensors: tuple[GgufTensor, ...]

    @property
    def architecture(self) -> str | None:
        """`general.architecture`, or None when missing or not a string."""
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else None

    @property
    def tensor_bytes(self) -> int:
        """The sum of this file's tensors' bytes."""
        return sum(t.nbytes for t in self.tensors)

    @property
    def data_size(self) -> int:
        """The data section's size as llama.cpp lays it out (each tensor padded)."""
        pad = self.alignment
        return sum(-(-t.nbytes // pad) * pad for t in self.tensors)


@dataclass(frozen=True)
class SplitInfo:
    """A model split into parts (`NAME-00001-of-0000N.gguf`), read as one."""

    count: int
    tensors_count: int
    """`split.tensors.count`: the tensors of every part together."""


@dataclass(frozen=True)
class GgufModel:
    """One GGUF model: its file (or split parts, in order) and a projector beside it."""

    files: tuple[GgufFile, ...]
    split: SplitInfo | None = None
    projector: GgufFile | None = None
    """An `mmproj-*.gguf` beside the model (llama.cpp's `-hf` pick among several)."""
    notes: tuple[str, ...] = ()
    """One line each: which file was picked among several, which projector."""

    @property
    def first(self) -> GgufFile:
        """The file holding the model's metadata (the first part of a split)."""
        return self.files[0]

    @property
    def architecture(self) -> str:
        """`general.architecture` as written (any string: the load says whether it knows it)."""
        return self.first.architecture or ""

    @property
    def metadata(self) -> dict[str, GgufValue]:
        """The model's metadata (the first part's: gguf-split writes it there)."""
        return self.first.metadata

    @property
    def tensors(self) -> tuple[GgufTensor, ...]:
        """Every tensor of every part, in file order."""
        return tuple(t for f in self.files for t in f.tensors)

    @property
    def weights_bytes(self) -> int:
        """The sum of the tensors' bytes over every part (the projector not counted)."""
        return sum(f.tensor_bytes for f in self.files)

    @property
    def file_sizes(self) -> tuple[int, ...]:
        """Each part's size on disk (or on the Hub)."""
        return tuple(f.file_size for f in self.files)

    def value(self, key: str) -> GgufValue | None:
        """The metadata value of `key`, or None."""
        return self.first.metadata.get(key)

    def arch_value(self, suffix: str) -> GgufValue | None:
        """`{arch}.{suffix}` (`block_count`, `attention.head_count_kv`), or None."""
        return self.value(f"{self.architecture}.{suffix}")

    def arch_int(self, suffix: str) -> int | None:
        """`{arch}.{suffix}` when it is an integer (not a bool), else None."""
        value = self.arch_value(suffix)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def context_length(self) -> int | None:
        """`{arch}.context_length`: the context the model was trained for."""
        return self.arch_int("context_length")
