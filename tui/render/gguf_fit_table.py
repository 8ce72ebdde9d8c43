"""`fit`'s GGUF table (#40): one row per quant file, llama.cpp's load, ranked
(`core.gguf_load.fit.rank_gguf_rows`)."""

from __future__ import annotations

from collections.abc import Sequence

from core.answer.verdict import load_verdict_words
from core.display_text import clean_text
from core.gguf_load.fit import GgufAsk, GgufFitRow
from core.load.llama_cpp import LlamaCppOptions
from core.units import format_bytes_short
from tui.render.table_columns import TableColumn

COLUMNS = ("MODEL", "QUANT", "WEIGHTS", "TOTAL", "ON DEVICE", "VERDICT", "MAX CONTEXT",
           "GPU LAYERS", "FILE")  # fmt: skip
_RIGHT = {2, 3, 4, 6}
GGUF_COLUMNS = (
    # The Fits view's GGUF table: `fit`'s columns, the answer kept longest.
    TableColumn("MODEL", 0, min_width=16, essential=True),
    TableColumn("QUANT", 1, essential=True),
    TableColumn("WEIGHTS", 6, right=True),
    TableColumn("TOTAL", 5, right=True),
    TableColumn("ON DEVICE", 2, right=True, essential=True),
    TableColumn("VERDICT", 3, essential=True),
    TableColumn("MAX CONTEXT", 4, right=True, essential=True),
    TableColumn("GPU LAYERS", 4, essential=True),
    TableColumn("FILE", 7, min_width=12),
)
"""`fit`'s GGUF columns (`COLUMNS`), as the Fits view's table shows them."""


def _verdict(row: GgufFitRow) -> str:
    a = row.answer
    if a is None:
        return "no answer"
    return load_verdict_words(a.verdict)  # inspect's words for the same question


def gguf_cells(row: GgufFitRow) -> tuple[str, ...]:
    """A row's cells under `COLUMNS`, as `fit` prints them (strings from files cleaned)."""
    return tuple(clean_text(c) for c in _cells(row))


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


def gguf_heading(ask: GgufAsk) -> str:
    """What the GGUF rows answer, as `fit` heads its GGUF table."""
    tokens, options = ctx_words(ask.tokens), options_words(ask.options)
    return f"{HEADING} at {tokens}, {options} · Enter opens a row with its -ngl"


HEADING = "GGUF models: llama.cpp's load (vramscope's own; mlxcel reads no GGUF)"


def gguf_fit_text(rows: Sequence[GgufFitRow], tokens: str, options: str) -> list[str]:
    """The heading, the table (widths fitted, sizes right-aligned) and what it means."""
    lines = [
        "",
        f"{HEADING} at {tokens}, {options}",
    ]
    if not rows:
        return [*lines, "  (no GGUF files found)"]
    table = [COLUMNS, *(gguf_cells(r) for r in rows)]
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


def options_words(options: LlamaCppOptions) -> str:
    """`-ngl all, K f16, V f16, --parallel 1, --ubatch-size 512, flash attention on`."""
    ngl = "all" if options.n_gpu_layers < 0 else str(options.n_gpu_layers)
    unified = ", --kv-unified" if options.kv_unified else ""
    return (
        f"-ngl {ngl}, K {options.cache_type_k.value}, V {options.cache_type_v.value}, "
        f"--parallel {options.parallel}{unified}, --ubatch-size {options.ubatch_size}, "
        f"flash attention {options.flash_attn.value}"
    )


def ctx_words(tokens: int | None) -> str:
    """The context the GGUF rows are answered at, in words."""
    if not tokens:
        return "each model's trained context (llama.cpp's -c 0)"
    return f"{tokens:,} tokens"
