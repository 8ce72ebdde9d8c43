"""The safetensors files of a model folder, read as mlxcel's `weight_footprint_bytes`
reads them: `model.safetensors.index.json` when every listed shard exists (its
`metadata.total_size`, else the sum of the shards' headers), else
`model.safetensors`'s header (a failure here stops the search), else every
`*.safetensors` file's header, sorted by name. The weights term is then arithmetic on
what was read (`core.estimate.weights`).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.errors import FileFault, ShardIndexError, describe_os_error
from core.model.config import as_u64, decode_json, read_small_file
from core.model.safetensors_header import read_header_weight_bytes
from core.units import sat_add

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
INDEX_SIZE_CAP = 64 * 1024 * 1024


def path_components(name: str) -> list[str]:
    """The components of a relative POSIX path as Rust's `Path::components` yields them.

    Empty segments and `.` are dropped, except a `.` that starts the path; so
    `sub/` and `x/.` are one component, `./x` is two and `.` is one.
    """
    parts: list[str] = ["/"] if name.startswith("/") else []
    for i, segment in enumerate(name.split("/")):
        if segment == "" or (segment == "." and (i > 0 or parts)):
            continue
        parts.append(segment)
    return parts


def is_acceptable_shard_name(name: str) -> bool:
    """mlxcel's shard-name check: not absolute, no `..` component, no NUL, one component.

    Looser than it looks: `.`, `model..safetensors`, `a\\b.safetensors` and `sub/`
    pass (and then fail the existence check or the header read instead).
    """
    parts = path_components(name)
    return not name.startswith("/") and ".." not in parts and "\x00" not in name and len(parts) == 1


def _exists(path: Path | str) -> bool:
    """`Path::exists`: follows symlinks; a dangling link or a loop does not exist."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def _lexists(path: str) -> bool:
    """`symlink_metadata(path).is_ok()`: a broken symlink exists."""
    try:
        os.lstat(path)
    except (OSError, ValueError):
        return False
    return True


def dangling_link_problem(path: Path) -> str | None:
    """Why a path that is there does not resolve (a dangling link or a loop), else None."""
    if _exists(path) or not _lexists(str(path)):
        return None
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop"
    return "is a symbolic link to a missing file"


def has_safetensors_extension(name: str) -> bool:
    """Rust's `Path::extension() == "safetensors"`: `.safetensors` alone has no extension."""
    stem, dot, ext = name.rpartition(".")
    return bool(dot) and stem != "" and ext == "safetensors"


def read_index_shards(model_dir: Path) -> tuple[list[str], int | None]:
    """Validate the index; return its sorted shard names and `metadata.total_size`.

    Raises ShardIndexError when the index must be ignored (mlxcel then goes on
    to step 2), with the reason for the warning line.
    """
    path = model_dir / INDEX_FILE
    try:
        data = read_small_file(path, INDEX_SIZE_CAP)
    except OSError as exc:
        raise ShardIndexError(path, describe_os_error(exc)) from None
    try:
        index = decode_json(data, INDEX_FILE)
    except ValueError as exc:
        raise ShardIndexError(path, str(exc)) from None
    if not isinstance(index, dict):
        raise ShardIndexError(path, "is not a JSON object")
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict):
        raise ShardIndexError(path, "has no 'weight_map' object")
    # Non-string values are skipped, as mlxcel's `as_str` does; an 18,867-tensor
    # index names 16 files, so each distinct name is checked once.
    try:
        distinct: set[Any] = set(weight_map.values())  # C speed for the usual all-string map
    except TypeError:  # an unhashable value (array, object) is not a name either
        distinct = {v for v in weight_map.values() if isinstance(v, str)}
    names = {shard for shard in distinct if isinstance(shard, str)}
    if not names:
        raise ShardIndexError(path, "has no shard file names in 'weight_map'")
    shards = sorted(names)
    for shard in shards:
        if not is_acceptable_shard_name(shard):
            raise ShardIndexError(
                path, f"shard name {shard!r} is not a plain file name in the model folder"
            )
    for shard in shards:
        if not _lexists(os.path.join(model_dir, shard)):
            raise ShardIndexError(path, f"lists shard {shard!r}, which is missing")
    meta = index.get("metadata")
    total = as_u64(meta.get("total_size")) if isinstance(meta, Mapping) else None
    return shards, total


def _sum_headers(paths: list[Path]) -> int:
    total = 0
    for path in paths:
        total = sat_add(total, read_header_weight_bytes(path))
    return total


def glob_safetensors(model_dir: Path) -> list[str]:
    """Every entry named `*.safetensors` (Rust's extension rule), whatever its type,
    in byte order (OSError when the folder cannot be listed)."""
    with os.scandir(model_dir) as it:
        names = [e.name for e in it if has_safetensors_extension(e.name)]
    return sorted(names, key=os.fsencode)


class _Warnings:
    """Warning lines with one line per faulty file, however many steps meet it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._paths: set[str] = set()

    def add(self, line: str, path: str | None = None) -> None:
        if path is not None:
            if path in self._paths:
                return
            self._paths.add(path)
        self.lines.append(line)


def safetensors_weight_bytes(model_dir: Path) -> tuple[int | None, list[str], list[str]]:
    """mlxcel's `weight_footprint_bytes`: (bytes or None, files used, warnings)."""
    notes = _Warnings()
    index_path = model_dir / INDEX_FILE
    problem = dangling_link_problem(index_path)
    if problem:
        notes.add(f"{index_path}: {problem}; skipped", str(index_path))
    if _exists(index_path):
        try:
            shards, total = read_index_shards(model_dir)
        except ShardIndexError as exc:
            notes.add(f"ignored {exc}")
        else:
            if total is not None:
                return total, [INDEX_FILE], notes.lines
            try:
                paths = [Path(os.path.join(model_dir, s)) for s in shards]
                return _sum_headers(paths), shards, notes.lines
            except FileFault as exc:
                notes.add(f"ignored the index: {exc}", exc.path)
    single = model_dir / SINGLE_FILE
    if _exists(single):
        try:
            return read_header_weight_bytes(single), [SINGLE_FILE], notes.lines
        except FileFault as exc:
            notes.add(str(exc), exc.path)
            return None, [], notes.lines
    problem = dangling_link_problem(single)
    if problem:
        notes.add(f"{single}: {problem}; skipped, as mlxcel does", str(single))
    try:
        names = glob_safetensors(model_dir)
    except OSError as exc:
        notes.add(f"{model_dir}: {describe_os_error(exc)}")
        return None, [], notes.lines
    if not names:
        return None, [], notes.lines
    try:
        return _sum_headers([model_dir / n for n in names]), names, notes.lines
    except FileFault as exc:
        notes.add(f"{exc}; so no *.safetensors weights are counted", exc.path)
        return None, [], notes.lines
