"""A GGUF model on this machine: one file, a split set, or a folder holding GGUF files.

Only the header of each file is read (the first MiB, then more while the parser asks,
up to `HEADER_CAP`), through `open_regular`: never the tensor data, so a 100 GB file
costs what its header does. A split set is read part by part and checked whole
(`assemble`); a projector (`mmproj-*.gguf`) in the same folder is read beside the model.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import GgufError, describe_os_error
from core.gguf.header import HEADER_CAP, PEEK_CAP, NeedMoreBytes, parse_header, peek_context_length
from core.gguf.pick import find_best_projector, is_model_file, pick, split_name
from core.gguf.record import GgufFile, GgufModel, SplitInfo
from core.regular_file import open_regular

FIRST_READ = 1024 * 1024
"""The first read of a header: a whole small model's, most big models' but the vocabulary."""


def read_gguf_file(path: Path, cap: int = HEADER_CAP) -> GgufFile:
    """One file's header (raises GgufError naming the file and the fault)."""
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            buf = b""
            want = min(size, FIRST_READ, cap)
            while True:
                chunk = fh.read(want - len(buf))
                buf += chunk
                if len(buf) < want:
                    raise GgufError(path, "the file shrank while its header was read")
                try:
                    return parse_header(buf, size, str(path), cap)
                except NeedMoreBytes as more:
                    want = min(size, cap, max(more.end, 2 * len(buf)))
    except OSError as exc:
        raise GgufError(path, describe_os_error(exc)) from None
    except MemoryError:
        raise GgufError(path, "the header is too large to read into memory") from None


def part_paths(path: Path) -> list[Path]:
    """Every part of the split model `path` names (itself when it is not a part)."""
    info = split_name(path.name)
    if info is None or info.count <= 1:
        return [path]
    return [
        path.with_name(f"{info.prefix}-{i:05d}-of-{info.count:05d}.gguf")
        for i in range(1, info.count + 1)
    ]


def assemble(parts: list[GgufFile], where: str) -> tuple[GgufFile, ...]:
    """The parts of one model checked as llama.cpp's loader checks them: each part's
    `split.no` its place, one `split.count`, and the tensors adding up to
    `split.tensors.count` (raises GgufError)."""
    first = parts[0]
    count = first.metadata.get("split.count", 1)
    if not isinstance(count, int) or isinstance(count, bool):
        raise GgufError(first.path, "split.count is not an integer")
    if count != len(parts):
        if len(parts) == 1:
            raise GgufError(
                first.path,
                f"split.count says {count} parts, but the file is not named as a part "
                "(NAME-00001-of-0000N.gguf)",
            )
        raise GgufError(where, f"the file names say {len(parts)} parts, split.count says {count}")
    if count == 1:
        return (first,)
    for number, part in enumerate(parts):
        if part.metadata.get("split.no") != number:
            raise GgufError(
                part.path, f"split.no is {part.metadata.get('split.no')!r}, expected {number}"
            )
        if part.metadata.get("split.count") != count:
            raise GgufError(part.path, f"split.count is not {count} as in the first part")
    total = first.metadata.get("split.tensors.count")
    found = sum(len(p.tensors) for p in parts)
    if total != found:
        raise GgufError(where, f"split.tensors.count is {total!r}, the parts hold {found}")
    return tuple(parts)


def _split_info(files: tuple[GgufFile, ...]) -> SplitInfo | None:
    if len(files) == 1:
        return None
    return SplitInfo(len(files), sum(len(f.tensors) for f in files))


def read_gguf_model(path: Path, tag: str = "") -> GgufModel:
    """The GGUF model at `path`: a file (a split set's part names the whole set), or a
    folder (the file llama.cpp's `-hf` rule picks, for `tag` or its defaults); a
    projector in the same folder comes with it. Raises GgufError or ModelNotFoundError."""
    if path.is_dir():
        names = sorted(p.name for p in path.iterdir() if p.name.endswith(".gguf"))
        return read_picked(path, names, tag, str(path))
    paths = part_paths(path)
    try:
        siblings = sorted(p.name for p in path.parent.iterdir() if p.name.endswith(".gguf"))
    except OSError:
        siblings = []
    projector = find_best_projector(siblings, paths[0].name)
    return _read_parts(paths, path.parent / projector if projector else None, [])


def read_picked(root: Path, names: list[str], tag: str, where: str) -> GgufModel:
    """The model llama.cpp's `-hf` rule picks among `names` (paths under `root`, in the
    listing's order), and its projector."""
    chosen, projector = pick(names, tag, where)
    notes: list[str] = []
    models = {info.prefix for n in names if is_model_file(n) and (info := split_name(n))}
    if len(models) > 1:
        notes.append(
            f"{len(models)} GGUF model files in {where}: read {chosen[0]} "
            f"(llama.cpp's -hf pick: {tag or 'Q4_K_M, then Q8_0, then the first'})"
        )
    # The parts by name, not by listing: a missing one is named as missing.
    return _read_parts(part_paths(root / chosen[0]), root / projector if projector else None, notes)


def _read_parts(paths: list[Path], projector: Path | None, notes: list[str]) -> GgufModel:
    for part in paths:
        if not part.exists():
            info = split_name(part.name)
            assert info is not None
            raise GgufError(
                part, f"part {info.index} of {info.count} of the split model is missing"
            )
    files = assemble([read_gguf_file(p) for p in paths], str(paths[0]))
    projector_file = None
    if projector is not None and projector not in paths:
        projector_file = read_gguf_file(projector)
        notes.append(
            f"projector: {projector.name} (llama.cpp's pick of the mmproj files beside it)"
        )
    return GgufModel(files, _split_info(files), projector_file, tuple(notes))


def peek_context_length_of(path: Path) -> int | None:
    """The trained context length the header's first `PEEK_CAP` bytes name, for a list
    row (None when they do not, or the file cannot be read: opening it says why)."""
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            prefix = fh.read(min(size, PEEK_CAP))
    except (OSError, GgufError):
        return None
    return peek_context_length(prefix, size, str(path))
