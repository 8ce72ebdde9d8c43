"""Every tensor's name, dtype and shape in a model folder, from the headers alone."""

from __future__ import annotations

import os
from pathlib import Path

from core.model.safetensors_header import parse_header_entries, read_header_json

Tensor = tuple[str, str, tuple[int, ...]]


def mlx_lm_weight_files(model_dir: Path) -> list[Path]:
    """The files `mlx_lm.utils.load_model` reads: `model*.safetensors` (raises OSError)."""
    with os.scandir(model_dir) as it:
        names = [
            e.name for e in it if e.name.startswith("model") and e.name.endswith(".safetensors")
        ]
    return [model_dir / n for n in sorted(names)]


def folder_tensors(model_dir: Path) -> list[Tensor]:
    """The tensors of every file mlx-lm would load (raises HeaderError or OSError)."""
    tensors: list[Tensor] = []
    for path in mlx_lm_weight_files(model_dir):
        header, _, _ = read_header_json(path)
        tensors.extend((e.name, e.dtype, e.shape) for e in parse_header_entries(header, path))
    return tensors
