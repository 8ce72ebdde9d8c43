"""The measurement history as rows for the history screen, and its Markdown export.

Pure over `core.measurement.result.MeasuredPeak` records, in the words of
`core.measurement.report`. The export is the "Estimate against peak" table of
`vramscope table` (`core.measurement.report.markdown_table`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.estimate.estimate import KvCacheMode
from core.measurement.report import (
    TableRow,
    covered_cell,
    margin_short,
    markdown_table,
    peak_what,
)
from core.measurement.result import MeasuredPeak, UnmeasuredRun
from core.units import format_bytes_short
from tui.model.names import short_model

EXPORT_TITLE = "Estimate against peak"
EXPORT_FILE = "vramscope-estimate-against-peak.md"
"""The export's default name, in the directory vramscope was started from."""
COLUMNS = (
    "Time (UTC)",
    "Model",
    "Engine",
    "Device",
    "Budget",
    "P + G",
    "Peak",
    "Estimate",
    "Margin",
    "Covered",
)
MODEL_WIDTH = 30
COUNTED = {"allocator peak": "alloc", "RSS over baseline": "RSS", "MLX peak memory": "peak"}
"""What a peak counted, in the table's few letters (the export says it in full)."""
NUMERIC = frozenset({"Budget", "P + G", "Peak", "Estimate", "Margin"})
"""Columns of numbers: right-aligned, so digits line up."""


def display_path(path: Path) -> str:
    """A path with the home folder written `~`."""
    home, text = str(Path.home()), str(path)
    if text == home or text.startswith(home + os.sep):
        return "~" + text[len(home) :]
    return text


@dataclass(frozen=True)
class HistoryRow:
    """One past run as the history screen lists it (cells in `COLUMNS` order)."""

    cells: tuple[str, ...]
    covered: bool | None
    """None when the run has no estimate to compare with."""


def newest_first(records: Sequence[MeasuredPeak]) -> list[MeasuredPeak]:
    """The history is append-only, so the file's order reversed is newest first."""
    return list(reversed(records))


def when(timestamp: str) -> str:
    """`2025-06-01T14:03:09+00:00` as `2025-06-01 14:03`; anything else as it is."""
    if len(timestamp) >= 16 and timestamp[10] == "T":
        return f"{timestamp[:10]} {timestamp[11:16]}"
    return timestamp or "-"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def model_cell(name: str) -> str:
    """A repo id as `org/name` (a cache snapshot by its repo id, never its hash), a folder
    by its name, cut to the column."""
    return _cut(short_model(name), MODEL_WIDTH)


def history_row(peak: MeasuredPeak) -> HistoryRow:
    """Time, model, device, budget, P + G, peak, estimate, margin and ✓ / ✗."""
    budget = f"{peak.inflight_mib} MiB" if peak.inflight_mib else "0 (off)"
    workload = f"{peak.prompt_tokens}+{peak.gen_tokens}"
    if peak.kv_cache_mode is not KvCacheMode.FP16:  # mlx-lm's quantized cache (the mlx engine)
        workload += f" {peak.kv_cache_mode} KV"
    device = peak.device_kind.value + (" (synth)" if peak.synthetic_weights else "")
    m = peak.margin
    if peak.estimate_bytes is None or m is None:
        estimate, margin_cell, covered_words, covered = "-", "-", "-", None
    else:
        estimate = format_bytes_short(peak.estimate_bytes)
        margin_cell = f"{margin_short(m)} {m.percent:+.1f}%"
        covered = peak.covered
        exited = peak.exit_status not in (None, 0)  # a failed run covers nothing
        failed = f"exit {peak.exit_status}" if exited else None
        covered_words = covered_cell(bool(covered), marked=True, failed=failed)
    cells = (
        when(peak.timestamp),
        model_cell(peak.model),
        f"{peak.engine} {COUNTED.get(peak_what(peak), peak_what(peak))}",
        device,
        budget,
        workload,
        format_bytes_short(peak.peak_bytes),
        estimate,
        margin_cell,
        covered_words,
    )
    return HistoryRow(cells, covered)


def unmeasured_row(run: UnmeasuredRun) -> HistoryRow:
    """A run recorded "not measured" (no peak): its peak cell says so, nothing covered."""
    estimate = format_bytes_short(run.estimate_bytes) if run.estimate_bytes is not None else "-"
    exited = run.failure.exit_status not in (None, 0)
    peak = f"not measured (exit {run.failure.exit_status})" if exited else "not measured"
    cells = (
        when(run.timestamp),
        model_cell(run.model),
        f"{run.engine} -",
        "-",
        "-",
        f"0+{run.context_tokens}",
        peak,
        estimate,
        "-",
        "-",
    )
    return HistoryRow(cells, None)


def export_markdown(records: Sequence[MeasuredPeak]) -> str:
    """`vramscope table`'s "Estimate against peak" Markdown for these runs, in this order."""
    rows = [
        TableRow(short_model(r.model), r.context_tokens, r.inflight_mib, r.estimate_bytes, r)
        for r in records
    ]
    counted = sorted({f"{r.engine}: {r.peak_kind}" for r in records})
    preamble = [
        f"Exported from vramscope's measurement history: {len(rows)} run(s), newest first.",
        "Estimate: mlxcel's formula for the backend in the row's Formula column (ROCm's"
        " adds the in-flight term; CPU, CUDA and Metal have none), at P + G with the"
        " row's budget and KV mode, as recorded.",
        "Engine and what each peak counted: " + ("; ".join(counted) or "none") + ".",
    ]
    return markdown_table(rows, EXPORT_TITLE, preamble, formulas=True)


def write_export(records: Sequence[MeasuredPeak], path: Path) -> Path:
    """Write the export (parent folders made); the absolute path written. Raises OSError."""
    target = path.expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(export_markdown(records), encoding="utf-8")
    return target.resolve()
