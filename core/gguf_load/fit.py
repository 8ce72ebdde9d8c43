"""`fit`'s GGUF rows (#40): one per quant file, each `inspect`'s llama.cpp answer.

The GGUF files are found where the catalog looks for models (each `--models-dir`
folder and the folders in it, the Hugging Face cache's snapshots, where
`llama-server -hf` downloads them); a split model is one row (its first part), a
projector (`mmproj`) is counted with the model it sits beside, as llama.cpp's `-hf`
pick takes it. Every row is `core.gguf_load.answer.answer_gguf` on the file, so its
total, verdict, largest context and largest `--n-gpu-layers` are `inspect`'s.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.display_text import clean_text
from core.errors import VramscopeError
from core.gguf.pick import is_model_file, split_name
from core.gguf.record import GgufModel
from core.gguf_load.answer import GgufAnswer, answer_gguf, ctx_size
from core.load.llama_cpp import LlamaCppOptions, plan_for_model

_QUANT_TAG = re.compile(r"(?:I?Q[0-9]|T?Q[0-9]|F[0-9]|BF16|MXFP)", re.IGNORECASE)
SCAN_CAP = 4096
"""The most `.gguf` names one folder (or one cache snapshot) is searched for."""


@dataclass(frozen=True)
class GgufAsk:
    """The question every GGUF row answers: llama.cpp's flags, the context, the memory."""

    options: LlamaCppOptions
    tokens: int | None
    """`--ctx-size` (None or 0: each model's trained context, llama.cpp's default)."""
    available_bytes: int
    unread: str | None = None


@dataclass(frozen=True)
class GgufFile:
    """One quant file found on disk (a split model's first part)."""

    model: str
    """The model's name: its folder (or `org/repo` in the HF cache)."""
    path: Path

    @property
    def quant(self) -> str:
        info = split_name(self.path.name)
        return info.tag if info is not None and info.tag else "?"


@dataclass(frozen=True)
class GgufFitRow:
    """One quant file: its answer, or why there is none."""

    model: str
    file: str
    """The file as llama.cpp is given it (`-m PATH`, or `REPO:QUANT` for `-hf`)."""
    quant: str
    where: str
    answer: GgufAnswer | None
    unavailable: str | None = None
    from_store: bool = False

    @property
    def weights_bytes(self) -> int | None:
        return self.answer.load.weights_bytes if self.answer is not None else None

    @property
    def gpu_layers_words(self) -> str:
        """`all (29)`, `12 of 29`, `0 (host only)`, or `-`."""
        a = self.answer
        if a is None or a.fits is None:
            return "-"
        if a.fits:
            return f"{a.plan.offloaded_layers} of {a.layer_count}"
        if not a.gpu_layers:
            return "0 (host only)"
        return f"{a.gpu_layers} of {a.layer_count}"

    def json(self) -> dict[str, Any]:
        """A row of `fit --json`'s `gguf_rows`."""
        a = self.answer
        load = a.load if a is not None else None
        return {
            "model": self.model,
            "file": self.file,
            "quant": self.quant,
            "engine": "llama.cpp",
            "tokens": load.tokens if load is not None else None,
            "weights_bytes": load.weights_bytes if load is not None else None,
            "kv_bytes": load.kv_bytes if load is not None else None,
            "transient_bytes": load.transient_bytes if load is not None else None,
            "total_bytes": load.total_bytes if load is not None else None,
            "held_bytes": a.held_bytes if a is not None else None,
            "fits": a.fits if a is not None else None,
            "largest_context_tokens": a.context.tokens if a is not None else None,
            "n_gpu_layers": a.plan.offloaded_layers if a is not None else None,
            "layer_count": a.layer_count if a is not None else None,
            "largest_gpu_layers": a.gpu_layers if a is not None else None,
            "llama_server": a.command if a is not None else None,
            "llama_server_fits": a.fitting_command if a is not None else None,
            "where": self.where,
            "from_store": self.from_store,
            "unavailable": self.unavailable,
        }


def _model_files(names: Iterable[str]) -> list[str]:
    """The model files among `names` (a split's first part only, no projector)."""
    out = []
    for name in names:
        info = split_name(name)
        if is_model_file(name) and info is not None and (info.count <= 1 or info.index == 1):
            out.append(name)
    return sorted(out)


def _gguf_names(folder: Path) -> list[str]:
    try:
        names = []
        for entry in os.scandir(folder):
            if entry.name.endswith(".gguf") and entry.is_file():
                names.append(entry.name)
                if len(names) > SCAN_CAP:
                    break
        return names
    except OSError:
        return []


def _snapshot(repo_dir: Path) -> Path | None:
    """The snapshot `refs/main` names in an HF cache repo folder, else the newest."""
    from core.regular_file import read_regular

    try:
        commit = read_regular(repo_dir / "refs" / "main", 256)[:256].decode("ascii").strip()
        snapshot = repo_dir / "snapshots" / commit
        if commit and snapshot.is_dir():
            return snapshot
        snapshots = [p for p in (repo_dir / "snapshots").iterdir() if p.is_dir()]
        return max(snapshots, key=lambda p: p.stat().st_mtime) if snapshots else None
    except (OSError, ValueError):
        return None


def _cache_files(cache: Path) -> list[GgufFile]:
    found: list[GgufFile] = []
    try:
        repos = sorted(p for p in cache.iterdir() if p.name.startswith("models--"))
    except OSError:
        return []
    for repo_dir in repos:
        snapshot = _snapshot(repo_dir)
        if snapshot is None:
            continue
        repo = repo_dir.name.removeprefix("models--").replace("--", "/")
        seen = 0
        for folder, _, files in os.walk(snapshot):
            names = [f for f in files if f.endswith(".gguf")]
            seen += len(names)
            if seen > SCAN_CAP:
                break
            found += [GgufFile(repo, Path(folder) / n) for n in _model_files(names)]
    return found


def local_gguf_files(models_dirs: Sequence[Path], hf_cache: Path | None) -> list[GgufFile]:
    """Every GGUF quant file in the models folders (each folder and its subfolders one
    level down) and the HF cache; a file reached twice is listed once."""
    found: list[GgufFile] = []
    for root in models_dirs:
        folders = [root]
        with contextlib.suppress(OSError):
            folders += sorted(p for p in root.iterdir() if p.is_dir())
        for folder in folders:
            if folder.name.startswith("models--"):
                continue
            names = _gguf_names(folder)
            found += [GgufFile(folder.name, folder / n) for n in _model_files(names)]
        if any(p.name.startswith("models--") for p in folders):
            found += _cache_files(root)
    if hf_cache is not None:
        found += _cache_files(hf_cache)
    unique: dict[str, GgufFile] = {}
    for f in found:
        try:
            key = os.path.realpath(f.path)
        except (OSError, ValueError):
            key = str(f.path)
        unique.setdefault(key, f)
    return list(unique.values())


def name_quant(name: str) -> str | None:
    """The file name's quant tag (`Q4_K_M`, as `REPO:QUANT` picks it), None when its
    last word is no quant (`golden-gemma3.gguf`)."""
    info = split_name(name)
    if info is not None and info.tag and _QUANT_TAG.match(info.tag):
        return info.tag
    return None


def quant_label(name: str, model: GgufModel) -> str:
    """The quant a row is named by: the file name's tag where it is one (`Q4_K_M`, as
    `REPO:QUANT` picks it), else the type holding most of the tensors' bytes (`Q8_0`)."""
    tag = name_quant(name)
    if tag is not None:
        return tag
    counts: Counter[str] = Counter()
    for t in model.tensors:
        counts[t.type.name] += t.nbytes
    return counts.most_common(1)[0][0] if counts else "?"


def answer_row(
    model: str,
    quant: str,
    read: GgufModel,
    ask: GgufAsk,
    model_arg: str,
    *,
    hub: bool,
    where: str,
    from_store: bool = False,
) -> GgufFitRow:
    """The row for a `GgufModel` read (`read`), or its one-line reason."""
    try:
        plan = plan_for_model(read, ask.options)
        ctx = ctx_size(ask.tokens, plan, read.architecture)
        projector = read.projector.path if read.projector is not None and not hub else None
        found = answer_gguf(
            plan, ctx, ask.available_bytes, ask.unread, model_arg,
            hub=hub, projector=projector, arch=read.architecture,
        )  # fmt: skip
    except VramscopeError as exc:
        return GgufFitRow(model, model_arg, quant, where, None, clean_text(str(exc)), from_store)
    return GgufFitRow(model, model_arg, quant, where, found, None, from_store)


def local_rows(files: Sequence[GgufFile], ask: GgufAsk) -> list[GgufFitRow]:
    """A row per file: read (headers only) and answered; a bad file is its reason."""
    from core.gguf.local import read_gguf_model

    rows = []
    for f in files:
        try:
            read = read_gguf_model(f.path)
        except VramscopeError as exc:
            reason = clean_text(str(exc))
            rows.append(GgufFitRow(f.model, str(f.path), f.quant, str(f.path), None, reason))
            continue
        quant = quant_label(f.path.name, read)
        rows.append(
            answer_row(f.model, quant, read, ask, str(f.path), hub=False, where=str(f.path))
        )
    return rows


def rank_gguf_rows(rows: Iterable[GgufFitRow]) -> list[GgufFitRow]:
    """Fitting rows first (the larger weights first), then those that fit with some
    layers on the host (the more layers on the device first), then the rest."""

    def key(row: GgufFitRow) -> tuple[int, float, int, str, str]:
        a = row.answer
        if a is None:
            return (3, 0.0, 0, row.model, row.file)
        weights = -a.load.weights_bytes
        if a.fits:
            return (0, 0.0, weights, row.model, row.file)
        share = (a.gpu_layers or 0) / a.layer_count
        return (1 if share else 2, -share, weights, row.model, row.file)

    return sorted(rows, key=key)
