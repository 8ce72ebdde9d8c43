"""Which GGUF file a name means, by llama.cpp's own rules (`common/download.cpp`).

`llama-server -hf REPO:Q4_K_M` lists the repo's files and picks: the first model file
(not `mmproj`, `imatrix`, `mtp-`, `eagle3-`, `dflash-`, `dspark-`) whose path holds the
tag followed by `.` or `-` (any case), skipping split parts other than the first; with
no tag, `Q4_K_M` then `Q8_0`, then the first model file. A split model is every file of
the same prefix and part count. The projector is the `mmproj` file in the model's folder
or one above it, the deepest first, then the nearest in quantization bits. The same
rules pick among the GGUF files of a local folder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import ModelNotFoundError

_SPLIT = re.compile(r"^(.+)-([0-9]{5})-of-([0-9]{5})$", re.IGNORECASE)
_TAG = re.compile(r"[-.]([A-Z0-9_]+)$", re.IGNORECASE)
DEFAULT_TAGS = ("Q4_K_M", "Q8_0")
"""llama.cpp's picks when the repo id names no quant."""
_NOT_MODELS = ("mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-")


@dataclass(frozen=True)
class SplitName:
    """What a GGUF file name says: its prefix (tag included), quant tag and part."""

    prefix: str
    tag: str
    """The quant tag, upper case (`Q4_K_M`, `F16`), or empty."""
    index: int
    count: int


def split_name(path: str) -> SplitName | None:
    """`get_gguf_split_info`: None for a name not ending in `.gguf`."""
    if not path.endswith(".gguf"):
        return None
    prefix = path[: -len(".gguf")]
    index = count = 1
    if m := _SPLIT.fullmatch(prefix):
        prefix, index, count = m.group(1), int(m.group(2)), int(m.group(3))
    tag = m.group(1).upper() if (m := _TAG.search(prefix)) else ""
    return SplitName(prefix, tag, index, count)


def quant_bits(path: str) -> int:
    """`extract_quant_bits`: the number in the quant tag (Q4_0 4, F16 16, BF16 16), or 0."""
    info = split_name(path)
    m = re.search(r"[0-9]+", info.tag) if info else None
    return int(m.group()) if m else 0


def is_model_file(path: str) -> bool:
    """A `.gguf` that is a model, not a projector, imatrix or draft (`gguf_filename_is_model`)."""
    name = path.rsplit("/", 1)[-1]
    return path.endswith(".gguf") and not any(word in name for word in _NOT_MODELS)


def is_projector_file(path: str) -> bool:
    """A multimodal projector (`mmproj` in the name) as llama.cpp finds one."""
    return path.endswith(".gguf") and "mmproj" in path


def split_repo_tag(text: str) -> tuple[str, str]:
    """`common_download_split_repo_tag`: `REPO[:QUANT]` into the repo and the tag."""
    parts = text.split(":")
    tag = parts[-1] if len(parts) > 1 else ""
    return parts[0], tag


def find_best_model(files: Sequence[str], tag: str = "") -> str | None:
    """The file llama.cpp picks for `REPO:tag` among `files` (in the listing's order)."""
    for want in (tag,) if tag else DEFAULT_TAGS:
        pattern = re.compile(re.escape(want) + "[.-]", re.IGNORECASE)
        for path in files:
            if is_model_file(path) and pattern.search(path) and _first_part(path):
                return path
    if not tag:
        for path in files:
            if is_model_file(path) and _first_part(path):
                return path
    return None


def _first_part(path: str) -> bool:
    info = split_name(path)
    return info is not None and (info.count <= 1 or info.index == 1)


def split_files(files: Sequence[str], path: str) -> list[str]:
    """`get_split_files`: every part of the split model `path` starts (or just `path`)."""
    info = split_name(path)
    if info is None or info.count <= 1:
        return [path]
    return [
        f
        for f in files
        if (other := split_name(f)) is not None
        and other.count == info.count
        and other.prefix == info.prefix
    ]


def find_best_projector(files: Sequence[str], model: str) -> str | None:
    """`find_best_mmproj`: the `mmproj` file in the model's folder or above it, the
    deepest first, then the one nearest the model's quantization bits."""
    model_bits = quant_bits(model)
    model_dir = model.split("/")[:-1]
    best: str | None = None
    best_depth = best_diff = 0
    for path in files:
        if not is_projector_file(path):
            continue
        sib_dir = path.split("/")[:-1]
        if sib_dir != model_dir[: len(sib_dir)]:
            continue  # not in the model's folder nor one above it
        depth = len(sib_dir)
        diff = abs(quant_bits(path) - model_bits)
        if best is None or depth > best_depth or (depth == best_depth and diff < best_diff):
            best, best_depth, best_diff = path, depth, diff
    return best


def pick(files: Sequence[str], tag: str, where: str) -> tuple[list[str], str | None]:
    """The model's files (its parts, in order) and its projector among `files`; raises
    ModelNotFoundError naming the files there when nothing matches `tag`."""
    chosen = find_best_model(files, tag)
    if chosen is None:
        models = [f for f in files if is_model_file(f)]
        more = f" (+{len(models) - 12} more)" if len(models) > 12 else ""
        listed = ", ".join(models[:12]) + more
        if tag:
            found = f" (files: {listed})" if models else ""
            raise ModelNotFoundError(where, f"no GGUF file for quant {tag!r}{found}")
        raise ModelNotFoundError(where, "holds no GGUF model file")
    parts = sorted(split_files(files, chosen), key=lambda f: _part_index(f))
    return parts, find_best_projector(files, chosen)


def _part_index(path: str) -> int:
    info = split_name(path)
    return info.index if info else 1
