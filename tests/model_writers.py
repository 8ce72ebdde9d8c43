"""Writers of test and benchmark data: model folders of real safetensors headers over
sparse data, and Hugging Face cache layouts as the hub writes them. They ship with the
tests, not in the runtime packages (scripts/ import them from here too)."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.catalog.profiles import Profile, Tensor
from core.model.config import CONFIG_FILE
from core.model.safetensors_header import DTYPE_ITEMSIZE, tensor_bytes
from core.model.weight_files import INDEX_FILE

# --- Skeleton folders: real headers over sparse data --------------------------------------


def encode_header(tensors: list[Tensor], metadata: Mapping[str, str]) -> tuple[bytes, int]:
    """A safetensors header for tensors laid out back to back; returns (header, data bytes).

    MLX writes compact JSON with sorted keys and no padding; Hugging Face pads the
    header with spaces to a multiple of 8. The metadata's `format` picks the style.
    """
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name, dtype, shape in tensors:
        if dtype not in DTYPE_ITEMSIZE:
            raise ValueError(f"unknown dtype {dtype!r} for tensor {name!r}")
        size = tensor_bytes(dtype, shape)
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    mlx_style = metadata.get("format") == "mlx"
    text = json.dumps(header, separators=(",", ":"), sort_keys=mlx_style).encode("utf-8")
    if not mlx_style:
        text += b" " * (-len(text) % 8)
    return text, offset


def write_safetensors_skeleton(
    path: Path, tensors: list[Tensor], metadata: Mapping[str, str]
) -> int:
    """Write a real header and extend the file over a sparse hole; return data bytes."""
    header, data_bytes = encode_header(tensors, metadata)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(header)))
        fh.write(header)
        fh.truncate(8 + len(header) + data_bytes)
    return data_bytes


def write_skeleton(profile: Profile, dest: Path, *, layout: str = "headers") -> Path:
    """Write the profile as a model folder with no weights on disk.

    Layouts: `headers` (real shard headers over sparse data, plus an index with
    `metadata.total_size` when sharded, as mlx-lm writes it), `headers-no-index`,
    and `index-only` (the index with empty placeholder shard files, which mlxcel
    never opens when `total_size` is present).
    """
    if layout not in ("headers", "headers-no-index", "index-only"):
        raise ValueError(f"unknown skeleton layout {layout!r}")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / CONFIG_FILE).write_text(profile.config_text, encoding="utf-8")
    plan = profile.shard_plan()
    if not plan:
        return dest
    weight_map: dict[str, str] = {}
    for file, tensors in plan.items():
        for name, _, _ in tensors:
            weight_map[name] = file
        if layout == "index-only":
            (dest / file).touch()
        else:
            write_safetensors_skeleton(dest / file, tensors, profile.header_metadata)
    if layout == "index-only" or (layout == "headers" and len(plan) > 1):
        index = {
            "metadata": {"total_size": profile.weight_bytes},
            "weight_map": dict(sorted(weight_map.items())),
        }
        (dest / INDEX_FILE).write_text(json.dumps(index, indent=4), encoding="utf-8")
    return dest


def disk_usage(path: Path) -> int:
    """Bytes actually allocated under a folder (sparse holes excluded)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


# --- Writing the layout (tests and the benchmark build caches the way the hub does) ---


def git_blob_hash(data: bytes) -> str:
    """The git blob sha1 the hub names small (non-LFS) files' blobs by."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write_cache_file(
    repo_path: Path,
    commit: str,
    file_name: str,
    data: bytes = b"",
    *,
    from_file: Path | None = None,
) -> Path:
    """Write one snapshot file as the hub does: the blob, then a relative symlink to it.

    Small files' blobs are named by their git blob sha1, as the hub names them.
    `from_file` moves an already written file (e.g. a sparse safetensors skeleton)
    into `blobs/` with `os.replace`, which keeps it sparse; its blob is named by a
    sha256 of its path and size, standing in for the LFS oid (nothing reads it back).
    """
    blobs = repo_path / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    if from_file is None:
        blob = blobs / git_blob_hash(data)
        if not blob.exists():
            blob.write_bytes(data)
    else:
        stand_in = f"{repo_path.name}/{file_name}:{from_file.stat().st_size}".encode()
        blob = blobs / hashlib.sha256(stand_in).hexdigest()
        os.replace(from_file, blob)
    link = repo_path / "snapshots" / commit / file_name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(blob, link.parent))
    return link


def write_ref(repo_path: Path, ref: str, commit: str) -> None:
    """`refs/<ref>` holding the commit hash (no newline, as the hub writes it)."""
    path = repo_path / "refs" / ref
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(commit)
