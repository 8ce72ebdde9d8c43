"""Which tensors a model has and where their bytes are: a file range, or nowhere.

Model folders are untrusted data. Shard names must be plain file names inside
the folder, headers go through `core.model.safetensors_header` (with its size cap and
dtype/shape checks), and every `data_offsets` range must match its tensor's size
and lie inside its file. Nothing is unpickled and nothing is memory-mapped.

A folder whose files hold no data (a sparse skeleton, empty placeholder shards,
or only a config) and a built-in profile are measured with synthetic weights:
tensors of the real names, dtypes and shapes filled with random values.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from core.errors import FileFault, ShardIndexError
from core.model.safetensors_header import parse_header_entries, read_header_json, tensor_bytes
from core.model.weight_files import INDEX_FILE, SINGLE_FILE, glob_safetensors, read_index_shards
from hip_backend.errors import BadModelError
from hip_backend.model.layout import TensorShape

SPARSE_FRACTION = 0.5
"""A file whose allocated blocks cover less than this share of its data is a skeleton."""


@dataclass(frozen=True)
class StoredTensor:
    """One tensor: its shape, and the absolute byte range in a file when data is on disk."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path | None = None
    offset: int = 0
    nbytes: int = 0


@dataclass(frozen=True)
class WeightPlan:
    """A model's tensors by name, and whether they will be synthetic."""

    tensors: dict[str, StoredTensor]
    synthetic: bool
    reason: str = ""
    """Why the weights are synthetic, for the notice line."""

    @property
    def total_bytes(self) -> int:
        """Sum of tensor bytes (the estimate's header-derived weights term)."""
        return sum(tensor_bytes(t.dtype, t.shape) for t in self.tensors.values())


def synthetic_plan(tensors: Iterable[TensorShape], reason: str) -> WeightPlan:
    """A plan with no data on disk."""
    return WeightPlan(
        {t.name: StoredTensor(t.name, t.dtype, tuple(t.shape)) for t in tensors}, True, reason
    )


def shard_files(model_dir: Path) -> list[Path]:
    """The safetensors files the estimate would read, in the same order of preference."""
    if os.path.exists(model_dir / INDEX_FILE):
        try:
            shards, _ = read_index_shards(model_dir)
        except ShardIndexError:
            pass  # ignored, as the estimate does; fall through to the single file / glob
        else:
            return [Path(os.path.join(model_dir, s)) for s in shards]
    single = model_dir / SINGLE_FILE
    if os.path.exists(single):
        return [single]
    # Every entry the estimate's glob step takes; a non-file among them is a bad model.
    return [model_dir / name for name in glob_safetensors(model_dir)]


def _holds_data(path: Path, data_start: int, data_bytes: int) -> bool:
    """False for a header-only file or a sparse skeleton; True when the data is there.

    A data region that is there but shorter than the header says is a damaged file
    (a truncated download), never a reason to measure synthetic weights.
    """
    st = path.stat()
    if st.st_size <= data_start and data_bytes > 0:
        return False  # header only
    if st.st_size < data_start + data_bytes:
        raise BadModelError(
            f"{path}: the data region is {st.st_size - data_start} bytes but the header "
            f"describes {data_bytes} (a truncated download?)"
        )
    allocated: int | None = getattr(st, "st_blocks", None)  # absent on Windows
    if allocated is None or data_bytes == 0:
        return True
    return allocated * 512 >= SPARSE_FRACTION * data_bytes


def _file_tensors(path: Path) -> tuple[list[StoredTensor], bool]:
    """Tensors of one file with validated ranges; and whether its data is on disk."""
    try:
        header, header_len, file_size = read_header_json(path)
        entries = parse_header_entries(header, path)
    except FileFault as exc:
        raise BadModelError(str(exc)) from None
    data_start = 8 + header_len
    tensors: list[StoredTensor] = []
    data_end = 0
    for entry in entries:
        info = header[entry.name]
        offsets = info.get("data_offsets")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        ):
            raise BadModelError(f"{path}: tensor {entry.name!r} has no valid 'data_offsets'")
        begin, end = offsets
        nbytes = entry.nbytes
        if begin < 0 or end - begin != nbytes:
            raise BadModelError(
                f"{path}: tensor {entry.name!r} spans {end - begin} bytes, "
                f"its dtype and shape need {nbytes}"
            )
        data_end = max(data_end, end)
        tensors.append(
            StoredTensor(entry.name, entry.dtype, entry.shape, path, data_start + begin, nbytes)
        )
    present = _holds_data(path, data_start, data_end)
    if present and data_start + data_end > file_size:
        raise BadModelError(f"{path}: data runs past the end of the file")
    return tensors, present


def plan_from_folder(model_dir: Path) -> WeightPlan | None:
    """The folder's tensors and data; None when it has no safetensors at all.

    Files that are empty placeholders or sparse skeletons make the whole plan
    synthetic (their header shapes are kept when there is a header).
    """
    files = shard_files(model_dir)
    if not files:
        return None
    tensors: dict[str, StoredTensor] = {}
    missing: list[str] = []
    for path in files:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            # A FIFO or a device has size 0 too: never mistake it for a placeholder.
            raise BadModelError(f"{path}: is not a regular file")
        if st.st_size == 0:
            return None  # placeholder shards (index only): shapes come from the config
        file_tensors, present = _file_tensors(path)
        if not present:
            missing.append(path.name)
        for t in file_tensors:
            if t.name in tensors:
                raise BadModelError(f"{path}: tensor {t.name!r} is also in another shard")
            tensors[t.name] = t
    if missing:
        shown = ", ".join(missing[:3]) + (" ..." if len(missing) > 3 else "")
        return WeightPlan(
            {n: StoredTensor(t.name, t.dtype, t.shape) for n, t in tensors.items()},
            True,
            f"no weight data on disk in {shown}",
        )
    return WeightPlan(tensors, False)


def without_data(plan: WeightPlan, reason: str) -> WeightPlan:
    """The same tensors, synthetic (a forced shape-only run)."""
    return synthetic_plan(
        (TensorShape(t.name, t.dtype, t.shape) for t in plan.tensors.values()), reason
    )
