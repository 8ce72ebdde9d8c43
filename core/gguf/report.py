"""What `inspect` prints for a GGUF model: what was read, each figure named with its source.

Until llama.cpp's memory load is joined in (#40), this is the reading itself: the
architecture as written, the files, the tensors by type, the weights (the sum of the
tensors' bytes, what llama.cpp's model buffers hold) and the trained context. Every
string from the file passes `clean_text` (text) or `json_safe` (JSON) here, once.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from core.display_text import clean_text, json_safe
from core.gguf.record import GgufFile, GgufModel
from core.units import format_bytes_short


def tensor_types(files: tuple[GgufFile, ...]) -> dict[str, int]:
    """Bytes per ggml type (`Q4_K`, `F32`), the largest first."""
    counts: Counter[str] = Counter()
    for f in files:
        for t in f.tensors:
            counts[t.type.name] += t.nbytes
    return dict(counts.most_common())


def _label(path: str) -> str:
    return clean_text(path)


def gguf_lines(model: GgufModel, name: str, source: str) -> list[str]:
    """The text report: one fact a line."""
    weights = model.weights_bytes
    arch = clean_text(model.architecture) or "(none: general.architecture is missing)"
    lines = [
        f"Model:           {clean_text(name)} (GGUF)",
        f"  Source:        {clean_text(source)}",
        f"  Architecture:  {arch} (general.architecture)",
    ]
    if model.split is not None:
        lines.append(f"  Files:         {model.split.count} parts, {sum(model.file_sizes):,} bytes")
        lines += [f"    {_label(f.path)}  {f.file_size:,} bytes" for f in model.files]
    else:
        lines.append(
            f"  File:          {_label(model.first.path)}  {model.first.file_size:,} bytes"
        )
    types = ", ".join(f"{k} {format_bytes_short(v)}" for k, v in tensor_types(model.files).items())
    lines.append(f"  Tensors:       {len(model.tensors):,} ({types})")
    lines.append(
        f"  Weights:       {format_bytes_short(weights)} ({weights:,} bytes: the sum of the "
        "tensors' bytes)"
    )
    context = model.context_length
    ctx_key = f"{arch}.context_length"
    lines.append(
        f"  Context:       {context:,} tokens ({ctx_key})"
        if context is not None
        else f"  Context:       unknown (no {ctx_key})"
    )
    if model.projector is not None:
        p = model.projector
        lines.append(
            f"  Projector:     {_label(p.path)}  {format_bytes_short(p.tensor_bytes)} "
            f"({p.tensor_bytes:,} bytes of tensors)"
        )
    lines += [f"  Note:          {clean_text(n)}" for n in model.notes]
    return lines


def gguf_json(model: GgufModel, name: str, source: str) -> dict[str, Any]:
    """The JSON report: the same facts, bytes as integers."""
    projector = model.projector
    report: dict[str, Any] = {
        "model": name,
        "format": "gguf",
        "source": source,
        "architecture": model.architecture,
        "files": [{"path": f.path, "size_bytes": f.file_size} for f in model.files],
        "split_count": model.split.count if model.split else 1,
        "tensor_count": len(model.tensors),
        "tensor_bytes_by_type": tensor_types(model.files),
        "weights_bytes": model.weights_bytes,
        "weights_source": "gguf_tensor_infos",
        "context_length": model.context_length,
        "projector": (
            None
            if projector is None
            else {"path": projector.path, "weights_bytes": projector.tensor_bytes}
        ),
        "notes": list(model.notes),
    }
    return dict(json_safe(report))
