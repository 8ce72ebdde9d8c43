"""Built-in profiles of real models: config.json and tensor manifest, no weights.

Each profile ships as an xz-compressed JSON file in `core/catalog/profile_data/`. The
tensor list is stored as a *manifest*: runs of identical blocks (the 48 layers of
a model, the 128 experts of a layer) are written once with the list of their
indices, in the original write order. The 18,867-tensor Qwen3-30B-A3B list
becomes a dozen rows, so every profile decodes in well under a millisecond and
the catalog never expands a tensor list just to show a size.

A profile's weights term is the sum of its tensor bytes, exactly what the header
sum of the real files gives, so `inspect` on a profile prints the same bytes as
on a folder of the real model. `tests/model_writers.py` writes that folder for the
tests and benchmarks: real safetensors headers over a sparse (unallocated) data region.
"""

from __future__ import annotations

import json
import lzma
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from core.estimate.snapshot import ModelSnapshot, snapshot_from_config
from core.estimate.weights import WeightsSource, WeightsTerm, weights_from_config
from core.model.config import CONFIG_FILE, ModelConfig, decode_json
from core.model.safetensors_header import DTYPE_ITEMSIZE, tensor_bytes
from core.model.weight_files import INDEX_FILE, SINGLE_FILE
from core.numbers import U64_DIGITS
from core.units import sat_add, sat_mul

PROFILE_DIR = Path(__file__).resolve().parent / "profile_data"
PROFILE_SUFFIX = ".json.xz"
PROFILE_FORMAT = 2

Tensor = tuple[str, str, tuple[int, ...]]


# --- The manifest: tensors with repeated blocks folded --------------------------------


@dataclass(frozen=True)
class Leaf:
    """One tensor; `name` is relative to the enclosing blocks' prefixes."""

    name: str
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Repeat:
    """`body` repeated once per index n, under the prefix `f"{prefix}{n}."`."""

    prefix: str
    indices: tuple[int, ...]
    body: tuple[Leaf | Repeat, ...]


Row = Leaf | Repeat


def _canonical_int(part: str) -> int | None:
    """The integer a name part spells, if it spells it canonically (`7`, not `07`)."""
    if part.isdecimal() and part.isascii() and len(part) <= U64_DIGITS and str(int(part)) == part:
        return int(part)
    return None


def _relative(rows: Sequence[Tensor], start: int, stop: int, head: str) -> list[Tensor]:
    return [(n[len(head) :], d, s) for n, d, s in rows[start:stop]]


def _block_len(rows: Sequence[Tensor], start: int, head: str) -> int:
    end = start
    while end < len(rows) and rows[end][0].startswith(head):
        end += 1
    return end - start


def _best_repeat(rows: Sequence[Tensor], i: int) -> tuple[str, list[int], int] | None:
    """The repeat starting at row i that covers the most rows: (prefix, indices, block len)."""
    parts = rows[i][0].split(".")
    best: tuple[str, list[int], int] | None = None
    for k, part in enumerate(parts[:-1]):
        first = _canonical_int(part)
        if first is None:
            continue
        prefix = ".".join(parts[:k]) + "." if k else ""
        head = f"{prefix}{part}."
        m = _block_len(rows, i, head)
        body = _relative(rows, i, i + m, head)
        indices = [first]
        j = i + m
        while j + m <= len(rows):
            name = rows[j][0]
            if not name.startswith(prefix):
                break
            n = _canonical_int(name[len(prefix) :].split(".", 1)[0])
            head_n = f"{prefix}{n}."
            if n is None or n in indices or _block_len(rows, j, head_n) != m:
                break
            if _relative(rows, j, j + m, head_n) != body:
                break
            indices.append(n)
            j += m
        if len(indices) > 1 and (best is None or len(indices) * m > len(best[1]) * best[2]):
            best = (prefix, indices, m)
    return best


def encode_manifest(tensors: Sequence[Tensor]) -> tuple[Row, ...]:
    """Fold repeated blocks of a tensor list (order-preserving; `expand` undoes it)."""
    out: list[Row] = []
    i = 0
    while i < len(tensors):
        found = _best_repeat(tensors, i)
        if found is None:
            name, dtype, shape = tensors[i]
            out.append(Leaf(name, dtype, tuple(shape)))
            i += 1
            continue
        prefix, indices, m = found
        head = f"{prefix}{indices[0]}."
        body = encode_manifest(_relative(tensors, i, i + m, head))
        out.append(Repeat(prefix, tuple(indices), body))
        i += m * len(indices)
    return tuple(out)


def expand(rows: Sequence[Row], outer: str = "") -> Iterator[Tensor]:
    """The tensors of a manifest, in write order, with full names."""
    for row in rows:
        if isinstance(row, Leaf):
            yield (outer + row.name, row.dtype, row.shape)
        else:
            for n in row.indices:
                yield from expand(row.body, f"{outer}{row.prefix}{n}.")


def manifest_bytes(rows: Sequence[Row]) -> int:
    """Sum of tensor bytes without expanding (saturating, as the header sum is)."""
    total = 0
    for row in rows:
        if isinstance(row, Leaf):
            total = sat_add(total, tensor_bytes(row.dtype, row.shape))
        else:
            total = sat_add(total, sat_mul(len(row.indices), manifest_bytes(row.body)))
    return total


def manifest_count(rows: Sequence[Row]) -> int:
    """Number of tensors without expanding."""
    return sum(1 if isinstance(r, Leaf) else len(r.indices) * manifest_count(r.body) for r in rows)


def manifest_dtype_bytes(rows: Sequence[Row], scale: int = 1) -> dict[str, int]:
    """Bytes per dtype without expanding."""
    out: dict[str, int] = {}
    for row in rows:
        if isinstance(row, Leaf):
            part = {row.dtype: tensor_bytes(row.dtype, row.shape) * scale}
        else:
            part = manifest_dtype_bytes(row.body, scale * len(row.indices))
        for dtype, size in part.items():
            out[dtype] = out.get(dtype, 0) + size
    return out


def rows_to_json(rows: Sequence[Row]) -> list[Any]:
    """JSON form: a tensor is `[name, dtype, shape]`, a repeat `{"p", "i", "b"}`."""
    return [
        [r.name, r.dtype, list(r.shape)]
        if isinstance(r, Leaf)
        else {"p": r.prefix, "i": list(r.indices), "b": rows_to_json(r.body)}
        for r in rows
    ]


def rows_from_json(data: Sequence[Any]) -> tuple[Row, ...]:
    """Inverse of `rows_to_json` (ValueError on anything else)."""
    out: list[Row] = []
    for item in data:
        if isinstance(item, list) and len(item) == 3:
            name, dtype, shape = item
            if not (isinstance(name, str) and dtype in DTYPE_ITEMSIZE and isinstance(shape, list)):
                raise ValueError(f"bad manifest tensor {item!r}")
            out.append(Leaf(name, dtype, tuple(int(d) for d in shape)))
        elif isinstance(item, dict):
            out.append(
                Repeat(str(item["p"]), tuple(int(n) for n in item["i"]), rows_from_json(item["b"]))
            )
        else:
            raise ValueError(f"bad manifest row {item!r}")
    return tuple(out)


# --- Profiles ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """One real model's config and tensor manifest."""

    repo_id: str
    config_text: str
    manifest: tuple[Row, ...] | None
    """The folded tensor list; None for config-only profiles."""
    shard_sizes: tuple[tuple[str, int], ...] | None
    """Known shard split as (file name, tensor count) over the write order, else None."""
    header_metadata: Mapping[str, str]

    @cached_property
    def config(self) -> ModelConfig:
        """The parsed config."""
        root = decode_json(self.config_text.encode("utf-8"), CONFIG_FILE)
        return ModelConfig.from_dict(root)

    @cached_property
    def tensors(self) -> tuple[Tensor, ...] | None:
        """(name, dtype, shape) in write order; None for config-only profiles."""
        return None if self.manifest is None else tuple(expand(self.manifest))

    @property
    def shards(self) -> dict[str, tuple[str, ...]] | None:
        """Known shard split (file name -> tensor names), else None (one file)."""
        return (
            {f: tuple(n for n, _, _ in ts) for f, ts in self.shard_plan().items()}
            if (self.shard_sizes)
            else None
        )

    @cached_property
    def weight_bytes(self) -> int | None:
        """Sum of tensor bytes (the header sum), or None for config-only profiles."""
        return None if self.manifest is None else manifest_bytes(self.manifest)

    @cached_property
    def tensor_count(self) -> int:
        """Number of tensors (0 for config-only profiles)."""
        return 0 if self.manifest is None else manifest_count(self.manifest)

    @cached_property
    def dtype_bytes(self) -> dict[str, int]:
        """Bytes per safetensors dtype (empty for config-only profiles)."""
        return {} if self.manifest is None else manifest_dtype_bytes(self.manifest)

    def weight_files(self) -> tuple[str, ...]:
        """The safetensors files the real model ships (none for config-only profiles)."""
        if self.manifest is None:
            return ()
        return tuple(f for f, _ in self.shard_sizes) if self.shard_sizes else (SINGLE_FILE,)

    def shard_plan(self) -> dict[str, list[Tensor]]:
        """File name -> tensors, using the known split or one `model.safetensors`."""
        if self.tensors is None:
            return {}
        if not self.shard_sizes:
            return {SINGLE_FILE: list(self.tensors)}
        plan: dict[str, list[Tensor]] = {}
        start = 0
        for file, count in self.shard_sizes:
            plan[file] = list(self.tensors[start : start + count])
            start += count
        return plan


def encode_profile(
    repo_id: str,
    config_text: str,
    tensors: Sequence[Tensor] | None,
    header_metadata: Mapping[str, str] | None = None,
    shard_sizes: Sequence[tuple[str, int]] | None = None,
) -> bytes:
    """The `.json.xz` bytes of a profile (what `scripts/build_profiles.py` writes)."""
    data: dict[str, Any] = {
        "format": PROFILE_FORMAT,
        "repo_id": repo_id,
        "config_text": config_text,
    }
    if tensors is not None:
        rows = encode_manifest(tensors)
        data["header_metadata"] = dict(header_metadata or {})
        data["shards"] = [list(s) for s in shard_sizes] if shard_sizes else None
        data["tensor_count"] = len(tensors)
        data["total_bytes"] = manifest_bytes(rows)
        data["manifest"] = rows_to_json(rows)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME)


def decode_profile(blob: bytes) -> Profile:
    """Decode a profile file's bytes; ValueError if it is damaged or inconsistent."""
    try:
        data = json.loads(lzma.decompress(blob))
    except (lzma.LZMAError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a profile file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != PROFILE_FORMAT:
        raise ValueError(f"profile format is not {PROFILE_FORMAT}")
    raw = data.get("manifest")
    manifest = rows_from_json(raw) if raw is not None else None
    shards = data.get("shards")
    profile = Profile(
        repo_id=str(data["repo_id"]),
        config_text=str(data["config_text"]),
        manifest=manifest,
        shard_sizes=tuple((str(f), int(n)) for f, n in shards) if shards else None,
        header_metadata={str(k): str(v) for k, v in (data.get("header_metadata") or {}).items()},
    )
    # The stored totals guard against a manifest that no longer adds up.
    if manifest is not None:
        if profile.weight_bytes != data.get("total_bytes"):
            raise ValueError("manifest bytes differ from the recorded total_bytes")
        if profile.tensor_count != data.get("tensor_count"):
            raise ValueError("manifest tensor count differs from the recorded tensor_count")
        if profile.shard_sizes and sum(n for _, n in profile.shard_sizes) != profile.tensor_count:
            raise ValueError("shard sizes do not add up to the tensor count")
    return profile


def profile_file_name(repo_id: str) -> str:
    """`org__repo.json.xz` for `org/repo`."""
    return repo_id.replace("/", "__", 1) + PROFILE_SUFFIX


def profile_files() -> list[Path]:
    """The shipped profile files, sorted."""
    return sorted(PROFILE_DIR.glob(f"*{PROFILE_SUFFIX}"))


def profile_id_of(path: Path) -> str:
    """`org/repo` from a profile file name."""
    return path.name.removesuffix(PROFILE_SUFFIX).replace("__", "/", 1)


@cache
def _profile_ids() -> tuple[str, ...]:
    return tuple(profile_id_of(p) for p in profile_files())


def list_profile_ids() -> list[str]:
    """Repo ids of every built-in profile, sorted (no decompression)."""
    return list(_profile_ids())


@cache
def load_profile(repo_id: str) -> Profile:
    """Decompress and decode one profile (KeyError if unknown, ValueError if damaged)."""
    path = PROFILE_DIR / profile_file_name(repo_id)
    if not path.is_file():
        raise KeyError(repo_id)
    return decode_profile(path.read_bytes())


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
        # The files the header-only folder's weights term names: its index when sharded.
        files = profile.weight_files()
        files = (INDEX_FILE,) if len(files) > 1 else files
        weights = WeightsTerm(weight_bytes, WeightsSource.SAFETENSORS_HEADER, (), files)
    return snapshot_from_config(display or profile.repo_id, config, weights)
