"""Weight bytes from safetensors headers, without touching the data region.

A file is an 8-byte little-endian header length `n` and `n` bytes of JSON that map
tensor names to `{dtype, shape, data_offsets}`. mlxcel sums `numel * itemsize`
over the tensors (ignoring `data_offsets`), so a header-only file whose data
region is a sparse hole weighs exactly what the real file does. Any malformed
entry rejects the whole file; the reason is kept for the warning line.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import HeaderError, describe_os_error
from core.model.config import as_u64, decode_json
from core.regular_file import open_regular
from core.units import U64_MAX, sat_mul

HEADER_SIZE_CAP = 256 * 1024 * 1024  # mlxcel's cap on the JSON header length
METADATA_KEY = "__metadata__"

DTYPE_ITEMSIZE: dict[str, int] = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "BF16": 2,
    "F16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E5M2": 1,
    "F8_E4M3": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of a header: name, safetensors dtype and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        """`numel * itemsize`, saturating; an empty shape is one element."""
        return sat_mul(DTYPE_ITEMSIZE[self.dtype], *self.shape)


def tensor_bytes(dtype: str, shape: Iterable[int]) -> int:
    """Bytes of one tensor (`KeyError` for an unknown dtype)."""
    return sat_mul(DTYPE_ITEMSIZE[dtype], *shape)


def parse_header_entries(header: Any, path: Path | str) -> list[TensorEntry]:
    """Validate a decoded header object and return its tensors (metadata skipped)."""
    if not isinstance(header, dict):
        raise HeaderError(path, "header is not a JSON object")
    entries: list[TensorEntry] = []
    for name, info in header.items():
        if name == METADATA_KEY:
            continue
        if not isinstance(info, dict):
            raise HeaderError(path, f"tensor {name!r} is not an object")
        dtype = info.get("dtype")
        if not isinstance(dtype, str):
            raise HeaderError(path, f"tensor {name!r} has no string 'dtype'")
        if dtype not in DTYPE_ITEMSIZE:
            raise HeaderError(path, f"tensor {name!r} has unknown dtype {dtype!r}")
        shape = info.get("shape")
        if not isinstance(shape, list):
            raise HeaderError(path, f"tensor {name!r} has no 'shape' array")
        dims: list[int] = []
        for dim in shape:
            value = as_u64(dim)
            if value is None:
                raise HeaderError(path, f"tensor {name!r} has a non-integer dimension {dim!r}")
            dims.append(value)
        entries.append(TensorEntry(name, dtype, tuple(dims)))
    return entries


def header_weight_bytes(header: Any, path: Path | str = "<header>") -> int:
    """Sum of tensor bytes of a decoded header (raises HeaderError).

    The hot path of every scan, so it multiplies plain ints and clamps as it goes
    (the same result as saturating each step: every factor is >= 0).
    """
    if not isinstance(header, dict):
        raise HeaderError(path, "header is not a JSON object")
    total = 0
    itemsize = DTYPE_ITEMSIZE
    for name, info in header.items():
        if name == METADATA_KEY:
            continue
        try:
            size = itemsize[info["dtype"]]
            shape = info["shape"]
            if type(shape) is not list:
                raise TypeError
            for dim in shape:
                if type(dim) is not int or not 0 <= dim <= U64_MAX:
                    raise TypeError
                size *= dim
                if size > U64_MAX:
                    size = U64_MAX + 1  # stays small; a later 0 still zeroes it
        except (KeyError, TypeError):
            parse_header_entries({name: info}, path)  # raises with the precise reason
            raise HeaderError(path, f"tensor {name!r} is malformed") from None
        total += min(size, U64_MAX)
    return min(total, U64_MAX)


@dataclass(frozen=True)
class HeaderInfo:
    """What a header tells without reading the data: byte sum and whether data is there."""

    weight_bytes: int
    data_end: int
    """Offset one past the last tensor byte according to `data_offsets` (0 if unknown)."""
    file_size: int
    metadata: dict[str, str]

    @property
    def has_data(self) -> bool:
        """True when the file is long enough to hold every tensor it declares."""
        return self.file_size >= self.data_end


def header_length(prefix: bytes) -> int:
    """The header length the first 8 bytes of a file declare (little-endian u64)."""
    (n,) = struct.unpack("<Q", prefix[:8])
    return int(n)


def read_header_json(path: Path) -> tuple[Any, int, int]:
    """Read and decode one file's header; returns (header, header length, file size)."""
    n = 0
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            prefix = fh.read(8)
            if len(prefix) < 8:
                raise HeaderError(
                    path, f"file is {len(prefix)} bytes, shorter than the 8-byte header length"
                )
            if prefix[:4] == b"GGUF":
                raise HeaderError(path, "is a GGUF file, not safetensors")
            n = header_length(prefix)
            if n == 0:
                raise HeaderError(path, "header length is 0")
            if n > HEADER_SIZE_CAP:
                raise HeaderError(path, f"header length {n} is over the {HEADER_SIZE_CAP}-byte cap")
            if 8 + n > size:
                raise HeaderError(
                    path, f"header length {n} runs past the end of the file ({size} bytes)"
                )
            data = fh.read(n)
    except OSError as exc:
        raise HeaderError(path, describe_os_error(exc)) from None
    except MemoryError:
        raise HeaderError(path, f"header length {n} is too large to read into memory") from None
    if len(data) < n:
        raise HeaderError(path, f"header length {n} runs past the end of the file")
    try:
        header = decode_json(data, "header")
    except ValueError as exc:
        raise HeaderError(path, str(exc)) from None
    return header, n, size


def read_header_info(path: Path) -> HeaderInfo:
    """Weight bytes of one safetensors file from its header (raises HeaderError)."""
    header, n, size = read_header_json(path)
    weight_bytes = header_weight_bytes(header, path)
    data_end = 0
    for name, info in header.items():
        offsets = info.get("data_offsets") if name != METADATA_KEY else None
        if isinstance(offsets, list) and len(offsets) == 2:
            end = as_u64(offsets[1])
            if end is not None:
                data_end = max(data_end, end)
    meta = header.get(METADATA_KEY)
    metadata = {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}
    return HeaderInfo(weight_bytes, 8 + n + data_end, size, metadata)


def read_header_weight_bytes(path: Path) -> int:
    """Weight bytes of one safetensors file (raises HeaderError)."""
    return read_header_info(path).weight_bytes
