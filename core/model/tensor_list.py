"""Every tensor's name, dtype and shape in a model folder, from the headers alone."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

from core.errors import HeaderError, describe_os_error
from core.model.safetensors_header import HEADER_SIZE_CAP, parse_header_entries
from core.regular_file import open_regular

Tensor = tuple[str, str, tuple[int, ...]]


def mlx_lm_weight_files(model_dir: Path) -> list[Path]:
    """The files `mlx_lm.utils.load_model` reads: `model*.safetensors` (raises OSError)."""
    with os.scandir(model_dir) as it:
        names = [
            e.name for e in it if e.name.startswith("model") and e.name.endswith(".safetensors")
        ]
    return [model_dir / n for n in sorted(names)]


def header_tensors(path: Path) -> list[Tensor]:
    """One file's tensors (raises HeaderError).

    Plain `json.loads`, not mlxcel's strict decoder: this list feeds vramscope's own
    what-ifs, where mlx-lm (the safetensors library) is the reader to follow.
    """
    try:
        with open_regular(path) as fh:
            prefix = fh.read(8)
            if len(prefix) < 8:
                raise HeaderError(path, "shorter than the 8-byte header length")
            (n,) = struct.unpack("<Q", prefix)
            if not 0 < n <= HEADER_SIZE_CAP:
                raise HeaderError(path, f"header length {n} is 0 or over the cap")
            data = fh.read(n)
    except OSError as exc:
        raise HeaderError(path, describe_os_error(exc)) from None
    if len(data) < n:
        raise HeaderError(path, f"header length {n} runs past the end of the file")
    try:
        header = json.loads(data)
    except (ValueError, RecursionError):
        raise HeaderError(path, "header is not valid JSON") from None
    return [(e.name, e.dtype, e.shape) for e in parse_header_entries(header, path)]


def folder_tensors(model_dir: Path) -> list[Tensor]:
    """The tensors of every file mlx-lm would load (raises HeaderError or OSError)."""
    tensors: list[Tensor] = []
    for path in mlx_lm_weight_files(model_dir):
        tensors.extend(header_tensors(path))
    return tensors


def folder_identity(model_dir: Path) -> tuple[tuple[object, ...], ...] | None:
    """Stats of config.json and the weight files: what a what-if of the folder depends on."""
    try:
        paths = [model_dir / "config.json", *mlx_lm_weight_files(model_dir)]
        out = []
        for path in paths:
            st = path.stat()
            out.append((path.name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    except (OSError, ValueError):
        return None
    return tuple(out)
