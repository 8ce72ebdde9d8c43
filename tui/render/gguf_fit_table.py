"""`fit`'s GGUF table (#40): one row per quant file, llama.cpp's load, ranked
(`core.gguf_load.fit.rank_gguf_rows`)."""

from __future__ import annotations

from collections.abc import Sequence

from core.answer.verdict import load_verdict_words
from core.display_text import clean_text
from core.gguf_load.fit import GgufFitRow
from core.units import format_bytes_short

COLUMNS = ("MODEL", "QUANT", "WEIGHTS", "TOTAL", "ON DEVICE", "VERDICT", "MAX CONTEXT",
           "GPU LAYERS", "FILE")  # fmt: skip
_RIGHT = {2, 3, 4, 6}


def _verdict(row: GgufFitRow) -> str:
    a = row.answer
    if a is None:
        return "no answer"
    return load_verdict_words(a.verdict)  # inspect's words for the same question


def _cells(row: GgufFitRow) -> tuple[str, ...]:
    a = row.answer
    if a is None:
        reason = row.unavailable or "no answer"
        return (row.model, row.quant, "-", "-", "-", "no answer", "-", "-", f"{row.file}: {reason}")
    context = a.context.tokens
    return (
        row.model,
        row.quant,
        format_bytes_short(a.load.weights_bytes),
        format_bytes_short(a.load.total_bytes),
        format_bytes_short(a.held_bytes),
        _verdict(row),
        f"{context:,}" if context is not None else "none",
        row.gpu_layers_words,
        row.file,
    )


def gguf_fit_text(rows: Sequence[GgufFitRow], tokens: str, options: str) -> list[str]:
    """The heading, the table (widths fitted, sizes right-aligned) and what it means."""
    lines = [
        "",
        f"GGUF models: llama.cpp's load (vramscope's own; mlxcel reads no GGUF) at {tokens}, "
        f"{options}",
    ]
    if not rows:
        return [*lines, "  (no GGUF files found)"]
    table = [COLUMNS, *(tuple(clean_text(c) for c in _cells(r)) for r in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(COLUMNS))]
    for row in table:
        cells = [
            cell.rjust(w) if i in _RIGHT else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row[:-1], widths, strict=False))
        ]
        lines.append(("  ".join(cells) + "  " + row[-1]).rstrip())
    lines.append(
        "ON DEVICE: the share held against the available memory (the whole load with -ngl 0); "
        "GPU LAYERS: the layers offloaded when it fits, else the most --n-gpu-layers that "
        "fits (of the repeating layers and the output layer)"
    )
    return lines
