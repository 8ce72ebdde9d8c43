"""One GGUF header parser over a byte prefix, for local files and Hub Range reads alike.

A GGUF file is the magic `GGUF`, a version, the tensor and key counts, the key/value
metadata, the tensor infos (name, dimensions, ggml type, offset), then the tensor data
from the next multiple of `general.alignment`. This reads everything before the data
and never the data. gguf-py's `GGUFReader` memory-maps the whole file and makes a numpy
view of every tensor; a Hub read has only a prefix, so both read through this one
parser, which takes gguf-py's constants (types, block sizes) as its truth.

`parse_header(prefix, file_size, path)` raises `NeedMoreBytes(end)` when the header goes
on past the prefix but not past the file: the caller reads up to `end` (or more) and
asks again. Every count and length is checked against the bytes left in the file before
anything is allocated, and the header against `HEADER_CAP`, so a hostile file costs at
most a cap's worth of reading. Checks follow ggml's `gguf.cpp` (the rules llama.cpp
loads by): the version, duplicate keys and tensor names, the name length, at most four
dimensions, a known type whose block divides the row, and each tensor's offset where
the one before it ends (padded).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, NoReturn

from core.errors import GgufError
from core.gguf.record import SMALL_ARRAY, GgufArray, GgufFile, GgufTensor, GgufValue

if TYPE_CHECKING:
    from gguf import GGMLQuantizationType, GGUFValueType

MAGIC = b"GGUF"
HEADER_CAP = 32 * 1024 * 1024
"""The most header vramscope reads (local or Hub). A 262k-token vocabulary with its
scores and merges is 6-8 MB; 32 MiB leaves room and bounds a hostile file."""
MAX_NAME = 64  # GGML_MAX_NAME: a tensor name is shorter
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_KEYS = 65_536
MAX_TENSORS = 262_144
"""Real files hold tens of keys and at most a few thousand tensors per file; the caps
bound what a hostile header within `HEADER_CAP` can make Python hold (each tensor info
is a record, each key a dict entry)."""
KEPT_ITEMS = 262_144
"""Array items kept as values across one header (the rest keep only their length)."""
_MIN_TENSOR_INFO = 8 + 4 + 4 + 8  # name length, n_dims, type, offset (a 0-d empty name)
_MIN_KV = 8 + 1 + 4 + 1  # key length, a 1-byte key, type, a 1-byte value
_I64_MAX = (1 << 63) - 1


class NeedMoreBytes(Exception):  # a request to read more, not an error
    """The header goes on past the prefix: read the file up to `end` and parse again."""

    def __init__(self, end: int) -> None:
        super().__init__(end)
        self.end = end


class _Cursor:
    """Reads little-endian values from the prefix, checked against the file and the cap."""

    def __init__(self, buf: bytes, file_size: int, path: str, cap: int) -> None:
        self.buf = memoryview(buf)
        self.file_size = file_size
        self.path = path
        self.cap = cap
        self.pos = 0
        self.kept = 0
        """Array items kept as values so far (`KEPT_ITEMS` bounds them)."""

    def left(self) -> int:
        """Bytes left in the file after the cursor."""
        return self.file_size - self.pos

    def past(self, text: str) -> NoReturn:
        """A count or length the rest of the file cannot hold: a cut file or a corrupt one."""
        raise GgufError(
            self.path,
            f"truncated or corrupt GGUF header: {text} "
            f"({self.left():,} of the file's {self.file_size:,} bytes left)",
        )

    def take(self, n: int, what: str) -> memoryview:
        end = self.pos + n
        if end > self.file_size:
            raise GgufError(
                self.path,
                f"truncated GGUF header: {what} runs past the end of the file "
                f"({self.file_size:,} bytes)",
            )
        if end > self.cap:
            mib = 1024 * 1024
            size = f"{self.cap // mib} MiB" if self.cap % mib == 0 else f"{self.cap:,}-byte"
            raise GgufError(self.path, f"GGUF header is over vramscope's {size} cap (at {what})")
        if end > len(self.buf):
            raise NeedMoreBytes(end)
        view = self.buf[self.pos : end]
        self.pos = end
        return view

    def unpack(self, fmt: str, what: str) -> int:
        value: int = struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]
        return value

    def string(self, what: str) -> str:
        size = self.unpack("<Q", what)
        if size > self.left():
            self.past(f"{what}: string length {size:,} runs past the end of the file")
        return bytes(self.take(size, what)).decode("utf-8", "replace")

    def skip_strings(self, count: int, what: str) -> None:
        """Walk `count` strings without keeping them (a tokenizer's tokens or merges)."""
        buf, pos, end = self.buf, self.pos, len(self.buf)
        for k in range(count):
            # Past the prefix, every string left needs 8 bytes at least: ask for them all
            # at once (a Hub read then takes few round trips over a 262k vocabulary).
            if pos + 8 > end:
                self.pos = pos
                self.take(8 * (count - k), what)  # raises: past the file, the cap, or more
            size = int.from_bytes(buf[pos : pos + 8], "little")
            if pos + 8 + size > end:
                self.pos = pos
                if size > self.left() - 8:
                    self.string(what)  # names the length past the file
                self.take(8 + size + 8 * (count - k - 1), what)
            pos += 8 + size
        self.pos = pos


_SCALARS = {
    0: "<B",  # UINT8
    1: "<b",  # INT8
    2: "<H",  # UINT16
    3: "<h",  # INT16
    4: "<I",  # UINT32
    5: "<i",  # INT32
    6: "<f",  # FLOAT32
    7: "<B",  # BOOL (one byte)
    10: "<Q",  # UINT64
    11: "<q",  # INT64
    12: "<d",  # FLOAT64
}
_STRING, _ARRAY, _BOOL = 8, 9, 7


def _value_type(code: int, cur: _Cursor, what: str) -> GGUFValueType:
    from gguf.constants import GGUFValueType

    try:
        return GGUFValueType(code)
    except ValueError:
        raise GgufError(cur.path, f"{what} has unknown GGUF value type {code}") from None


def _read_value(cur: _Cursor, kind: GGUFValueType, what: str) -> GgufValue:
    code = int(kind)
    if code == _STRING:
        return cur.string(what)
    if code == _ARRAY:
        return _read_array(cur, what)
    fmt = _SCALARS[code]
    raw = struct.unpack(fmt, cur.take(struct.calcsize(fmt), what))[0]
    if code == _BOOL:
        return bool(raw)
    return float(raw) if fmt in ("<f", "<d") else int(raw)


def _read_array(cur: _Cursor, what: str) -> GgufArray:
    item = _value_type(cur.unpack("<I", what), cur, f"{what}'s items")
    count = cur.unpack("<Q", what)
    code = int(item)
    if code == _ARRAY:
        raise GgufError(cur.path, f"{what} is an array of arrays, which GGUF does not hold")
    least = 8 if code == _STRING else struct.calcsize(_SCALARS[code])
    if count * least > cur.left():
        cur.past(f"{what}: array of {count:,} items runs past the end of the file")
    keep = count <= SMALL_ARRAY and cur.kept + count <= KEPT_ITEMS
    cur.kept += count if keep else 0
    if code == _STRING:
        if not keep:
            cur.skip_strings(count, what)
            return GgufArray(item, count, None)
        return GgufArray(item, count, tuple(cur.string(what) for _ in range(count)))
    fmt = _SCALARS[code]
    size = struct.calcsize(fmt)
    raw = cur.take(count * size, what)
    if not keep:
        return GgufArray(item, count, None)
    values = struct.unpack(f"<{count}{fmt[1]}", raw)
    if code == _BOOL:
        return GgufArray(item, count, tuple(bool(v) for v in values))
    return GgufArray(item, count, tuple(values))


def _check_magic(cur: _Cursor) -> int:
    """The version, after the magic; names a safetensors file for what it is."""
    magic = bytes(cur.take(4, "the magic"))
    if magic != MAGIC:
        prefix = bytes(cur.buf[:9])
        if len(prefix) == 9 and prefix[8:9] == b"{":
            raise GgufError(cur.path, "is a safetensors file, not GGUF")
        raise GgufError(cur.path, f"is not a GGUF file (it starts with {magic!r}, not b'GGUF')")
    version = cur.unpack("<I", "the version")
    if version & 0xFFFF == 0 and version:
        raise GgufError(cur.path, f"GGUF version {version:#x}: a big-endian file, not readable")
    if version not in (2, 3):
        raise GgufError(cur.path, f"GGUF version {version} is not supported (2 and 3 are)")
    return version


def parse_header(prefix: bytes, file_size: int, path: str, cap: int = HEADER_CAP) -> GgufFile:
    """The header of the GGUF file whose first bytes are `prefix` (raises `GgufError`,
    or `NeedMoreBytes` when the prefix ends before the header does)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    cur = _Cursor(prefix, file_size, path, cap)
    version = _check_magic(cur)
    n_tensors = cur.unpack("<Q", "the tensor count")
    n_kv = cur.unpack("<Q", "the metadata count")
    if n_kv * _MIN_KV > cur.left():
        cur.past(f"metadata count {n_kv:,} cannot fit in the file")
    if n_tensors * _MIN_TENSOR_INFO > cur.left():
        cur.past(f"tensor count {n_tensors:,} cannot fit in the file")
    if n_kv > MAX_KEYS:
        raise GgufError(path, f"metadata count {n_kv:,} is over vramscope's cap of {MAX_KEYS:,}")
    if n_tensors > MAX_TENSORS:
        raise GgufError(
            path, f"tensor count {n_tensors:,} is over vramscope's cap of {MAX_TENSORS:,}"
        )
    metadata: dict[str, GgufValue] = {}
    types: dict[str, GGUFValueType] = {}
    for i in range(n_kv):
        key = cur.string(f"metadata key {i}")
        if not key:
            raise GgufError(path, f"metadata key {i} is empty")
        if key in metadata:
            raise GgufError(path, f"metadata key {key!r} appears twice")
        kind = _value_type(cur.unpack("<I", f"{key!r}'s type"), cur, repr(key))
        metadata[key] = _read_value(cur, kind, repr(key))
        types[key] = kind
    alignment = _alignment(metadata, types, path)
    tensors = _read_tensor_infos(cur, n_tensors, GGML_QUANT_SIZES, GGMLQuantizationType)
    data_offset = -(-cur.pos // alignment) * alignment if n_tensors else cur.pos
    expected = 0
    for tensor in tensors:
        if tensor.offset != expected:
            raise GgufError(
                path,
                f"tensor {tensor.name!r} has offset {tensor.offset:,}, expected {expected:,}",
            )
        expected += -(-tensor.nbytes // alignment) * alignment
    if tensors and data_offset + tensors[-1].offset + tensors[-1].nbytes > file_size:
        need = data_offset + tensors[-1].offset + tensors[-1].nbytes
        raise GgufError(
            path,
            f"truncated GGUF file: its tensors end at byte {need:,}, the file has {file_size:,}",
        )
    return GgufFile(path, file_size, version, alignment, data_offset, metadata, types, tensors)


def _alignment(metadata: dict[str, GgufValue], types: dict[str, GGUFValueType], path: str) -> int:
    value = metadata.get("general.alignment")
    if value is None:
        return 32  # GGUF_DEFAULT_ALIGNMENT
    if int(types["general.alignment"]) != 4 or not isinstance(value, int):
        raise GgufError(path, "general.alignment is not a uint32")
    if value <= 0 or value & (value - 1):
        raise GgufError(path, f"general.alignment {value} is not a power of 2")
    return value


def _read_tensor_infos(
    cur: _Cursor,
    count: int,
    sizes: dict[GGMLQuantizationType, tuple[int, int]],
    types: type[GGMLQuantizationType],
) -> tuple[GgufTensor, ...]:
    tensors: list[GgufTensor] = []
    seen: set[str] = set()
    for i in range(count):
        name = cur.string(f"tensor {i}'s name")
        label = f"tensor {name!r}"
        if len(name.encode("utf-8", "replace")) >= MAX_NAME:
            raise GgufError(cur.path, f"tensor {i}'s name is {len(name)} characters (at most 63)")
        if name in seen:
            raise GgufError(cur.path, f"{label} appears twice")
        seen.add(name)
        n_dims = cur.unpack("<I", f"{label}'s dimension count")
        if n_dims > MAX_DIMS:
            raise GgufError(cur.path, f"{label} has {n_dims} dimensions (at most {MAX_DIMS})")
        shape = tuple(cur.unpack("<Q", f"{label}'s shape") for _ in range(n_dims))
        if any(d > _I64_MAX for d in shape):
            raise GgufError(cur.path, f"{label} has a negative dimension")
        code = cur.unpack("<I", f"{label}'s type")
        try:
            kind = types(code)
            block, type_size = sizes[kind]
        except (ValueError, KeyError):
            raise GgufError(cur.path, f"{label} has unknown ggml type {code}") from None
        row = shape[0] if shape else 1
        if row % block:
            raise GgufError(
                cur.path,
                f"{label} of type {kind.name} has {row} elements per row, "
                f"not a multiple of its block ({block})",
            )
        rows = 1
        for dim in shape[1:]:
            rows *= dim
        nbytes = row // block * type_size * rows
        if nbytes > _I64_MAX:
            raise GgufError(cur.path, f"{label} is over 2^63 bytes")
        offset = cur.unpack("<Q", f"{label}'s offset")
        tensors.append(GgufTensor(name, kind, shape, offset, nbytes))
    return tuple(tensors)


PEEK_CAP = 64 * 1024
"""The most a list row reads for its context length. llama.cpp's converter writes
`general.*` and the architecture's keys first and the tokenizer last, so the length
sits in the first few KiB; a file that puts it later shows no length until opened."""


def peek_context_length(prefix: bytes, file_size: int, path: str) -> int | None:
    """`{general.architecture}.context_length` when the metadata reaches it within
    `prefix` (at most `PEEK_CAP` bytes); None otherwise, or for any fault (opening the
    file reads it whole and names the fault). Imports nothing from gguf-py: the model
    list builds its rows with it."""
    cur = _Cursor(prefix, file_size, path, min(len(prefix), PEEK_CAP))
    arch: str | None = None
    lengths: dict[str, int] = {}
    try:
        _check_magic(cur)
        cur.unpack("<Q", "the tensor count")
        n_kv = cur.unpack("<Q", "the metadata count")
        for i in range(min(n_kv, MAX_KEYS)):
            key = cur.string(f"metadata key {i}")
            code = cur.unpack("<I", f"{key!r}'s type")
            value = _peek_value(cur, code, key)
            if key == "general.architecture" and isinstance(value, str):
                arch = value
            elif key.endswith(".context_length") and type(value) is int and value > 0:
                lengths[key.removesuffix(".context_length")] = value
            if arch is not None and arch in lengths:
                return lengths[arch]
    except (GgufError, NeedMoreBytes, _NotPeeked):
        return None
    return None


class _NotPeeked(Exception):
    """A value the peek does not walk (an unknown type, an array of arrays)."""


def _peek_value(cur: _Cursor, code: int, what: str) -> int | float | str | None:
    """A scalar or string value; arrays are stepped over (None)."""
    if code == _STRING:
        return cur.string(what)
    if code == _ARRAY:
        item = cur.unpack("<I", what)
        count = cur.unpack("<Q", what)
        if item == _STRING:
            cur.skip_strings(count, what)
        elif item in _SCALARS:
            cur.take(count * struct.calcsize(_SCALARS[item]), what)
        else:
            raise _NotPeeked
        return None
    if code not in _SCALARS:
        raise _NotPeeked
    fmt = _SCALARS[code]
    raw = struct.unpack(fmt, cur.take(struct.calcsize(fmt), what))[0]
    if code == _BOOL:
        return None
    return float(raw) if fmt in ("<f", "<d") else int(raw)
