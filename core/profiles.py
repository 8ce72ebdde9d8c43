"""Built-in profiles of real models: config.json and tensor list, no weights.

Each profile ships as an xz-compressed JSON file in `core/profile_data/`
(about 42 KB for all of them; the 18,867-tensor Qwen3-30B-A3B BF16 list is 20 KB).
A profile's weights term is the sum of its tensor bytes, exactly what the header
sum of the real files gives, so `inspect` on a profile prints the same bytes as
on a folder of the real model. `write_skeleton` writes that folder: real
safetensors headers over a sparse (unallocated) data region.
"""

from __future__ import annotations

import json
import lzma
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from core.config import CONFIG_FILE, ModelConfig, decode_json
from core.model import ModelSnapshot, snapshot_from_config
from core.safetensors_header import DTYPE_ITEMSIZE, tensor_bytes
from core.units import sat_add
from core.weights import INDEX_FILE, SINGLE_FILE, WeightsSource, WeightsTerm, weights_from_config

PROFILE_DIR = Path(__file__).resolve().parent / "profile_data"
PROFILE_SUFFIX = ".json.xz"

Tensor = tuple[str, str, tuple[int, ...]]


@dataclass(frozen=True)
class Profile:
    """One real model's config and tensor manifest."""

    repo_id: str
    config_text: str
    tensors: tuple[Tensor, ...] | None
    """(name, dtype, shape) in write order; None for config-only profiles."""
    shards: dict[str, tuple[str, ...]] | None
    """Known shard split (file name -> tensor names), else None (one file)."""
    header_metadata: dict[str, str]

    @property
    def config(self) -> ModelConfig:
        """The parsed config."""
        root = decode_json(self.config_text.encode("utf-8"), CONFIG_FILE)
        return ModelConfig.from_dict(root)

    @property
    def weight_bytes(self) -> int | None:
        """Sum of tensor bytes (the header sum), or None for config-only profiles."""
        if self.tensors is None:
            return None
        total = 0
        for _, dtype, shape in self.tensors:
            total = sat_add(total, tensor_bytes(dtype, shape))
        return total

    def shard_plan(self) -> dict[str, list[Tensor]]:
        """File name -> tensors, using the known split or one `model.safetensors`."""
        if self.tensors is None:
            return {}
        if not self.shards:
            return {SINGLE_FILE: list(self.tensors)}
        by_name = {t[0]: t for t in self.tensors}
        return {file: [by_name[n] for n in names] for file, names in self.shards.items()}


def _decode_profile(data: dict[str, Any]) -> Profile:
    tensors = data.get("tensors")
    shards = data.get("shards")
    return Profile(
        repo_id=data["repo_id"],
        config_text=data["config_text"],
        tensors=(tuple((n, d, tuple(s)) for n, d, s in tensors) if tensors is not None else None),
        shards={k: tuple(v) for k, v in shards.items()} if shards else None,
        header_metadata=dict(data.get("header_metadata") or {}),
    )


def profile_files() -> list[Path]:
    """The shipped profile files, sorted."""
    return sorted(PROFILE_DIR.glob(f"*{PROFILE_SUFFIX}"))


def profile_id_of(path: Path) -> str:
    """`org/repo` from a profile file name."""
    return path.name.removesuffix(PROFILE_SUFFIX).replace("__", "/", 1)


def list_profile_ids() -> list[str]:
    """Repo ids of every built-in profile (no decompression)."""
    return [profile_id_of(p) for p in profile_files()]


@cache
def load_profile(repo_id: str) -> Profile:
    """Decompress and decode one profile (KeyError if unknown)."""
    path = PROFILE_DIR / (repo_id.replace("/", "__", 1) + PROFILE_SUFFIX)
    if not path.is_file():
        raise KeyError(repo_id)
    return _decode_profile(json.loads(lzma.decompress(path.read_bytes())))


def iter_profiles() -> Iterator[Profile]:
    """Every built-in profile."""
    for repo_id in list_profile_ids():
        yield load_profile(repo_id)


def profile_snapshot(profile: Profile, display: str | None = None) -> ModelSnapshot:
    """The estimator's view of a profile, identical to its header-only folder."""
    config = profile.config
    weight_bytes = profile.weight_bytes
    if weight_bytes is None:
        weights = weights_from_config(config)
    else:
        files = tuple(profile.shard_plan())
        weights = WeightsTerm(weight_bytes, WeightsSource.SAFETENSORS_HEADER, (), files)
    return snapshot_from_config(display or profile.repo_id, config, weights)


def encode_header(tensors: list[Tensor], metadata: dict[str, str]) -> tuple[bytes, int]:
    """A safetensors header for tensors laid out back to back; returns (header, data bytes).

    MLX writes compact JSON with sorted keys and no padding; Hugging Face pads the
    header with spaces to a multiple of 8. The metadata's `format` picks the style.
    """
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = metadata
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


def write_safetensors_skeleton(path: Path, tensors: list[Tensor], metadata: dict[str, str]) -> int:
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
