"""Text for measured peaks: the words about one peak, the side-by-side comparison and
the sweep table.

Pure formatting over `core.measurement` values, shared by `vramscope measure`,
`vramscope table`, scripts/gpu_table.py and the explorer (tui/render/measure_text.py
lays these words out in its panel and history screen).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.backend import Backend
from core.display_text import clean_text
from core.measurement.comparison import Margin, margin
from core.measurement.engine import DEFAULT_ENGINE, Engine
from core.measurement.fields import ExternalFields, ExternalFigure
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure, status_words
from core.units import format_bytes, format_bytes_short

MLX_PEAK = "MLX peak memory"
"""What the mlx engine's peak counts: MLX's own peak of its allocations."""


def md_cell(text: str) -> str:
    """A Markdown table cell from untrusted text: control characters out (the display
    boundary), `|` escaped so a folder name cannot open a column."""
    return clean_text(text).replace("|", "\\|")


def signed_bytes(n: int) -> str:
    """`+1,234,567` / `-1,234` with thousands separators."""
    return f"{n:+,}"


def device_words(peak: MeasuredPeak) -> str:
    """The device the run measured on: `rocm AMD Radeon 8060S (gfx1151)`."""
    return f"{peak.device_kind.value} {peak.device_name}" + (f" ({peak.arch})" if peak.arch else "")


def device_line(peak: MeasuredPeak) -> str:
    """The device and the runtime that measured on it."""
    text = device_words(peak)
    if peak.engine is Engine.EXTERNAL:
        return text  # the command's own runtime is not known
    if peak.engine is Engine.MLX:
        return text + f", mlx {peak.mlx_version}, mlx-lm {peak.mlx_lm_version}"
    text += f", torch {peak.torch_version}"
    if peak.runtime_version:
        runtime = "HIP" if peak.device_kind is Backend.ROCM else "CUDA"
        text += f", {runtime} {peak.runtime_version}"
    return text


def budget_text(peak: MeasuredPeak, label: str = "in-flight budget") -> str:
    """The in-flight budget the run used, or that its runtime has none."""
    return peak.missing_queue or f"{label} {peak.budget_words}"


def peak_what(peak: MeasuredPeak) -> str:
    """What the headline peak is, in a few words (it depends on the engine and device)."""
    if peak.engine is Engine.MLX:
        return MLX_PEAK
    if peak.engine is Engine.EXTERNAL:
        fields = peak.fields
        device = isinstance(fields, ExternalFields) and fields.figure is ExternalFigure.DEVICE
        return "device memory of its processes" if device else "host RSS of its processes"
    if peak.device_kind in (Backend.ROCM, Backend.CUDA):
        return "allocator peak"
    if peak.device_kind is Backend.CPU:
        return "RSS over baseline"
    return peak.peak_kind


def covered_words(m: Margin, *, marked: bool = False, failed: str | None = None) -> str:
    """Whether the estimate covers the peak: `covered` / `NOT covered` (`marked`:
    `✓ covered` / `✗ NOT covered`, the explorer's panel and summary). A run that failed
    (`MeasuredPeak.failed_status`) covers nothing: `not counted: the run failed (...)`,
    marked `✗ NOT covered`."""
    covered = m.covered and failed is None
    if marked:
        return "✓ covered" if covered else "✗ NOT covered"
    if failed is not None:
        return f"not counted: the run failed ({failed})"
    return "covered" if covered else "NOT covered"


def covered_cell(covered: bool, *, marked: bool = False, failed: str | None = None) -> str:
    """A `Covered` column's cell: `yes` / `NO` (`marked`: `✓ yes` / `✗ NO`, the history
    view's table); a run that failed covers nothing and says why: `no: failed, ...`
    (`marked`: `✗ ...`)."""
    if failed:
        return f"✗ {failed}" if marked else f"no: failed, {failed}"
    words = "yes" if covered else "NO"
    return (("✓ " if covered else "✗ ") + words) if marked else words


def margin_short(m: Margin) -> str:
    """The margin in a short size with its sign: `+1.20 GiB`, `-512.00 MiB`."""
    return ("+" if m.bytes >= 0 else "-") + format_bytes_short(abs(m.bytes))


def margin_json(m: Margin | None, failed: str | None = None) -> dict[str, Any] | None:
    """A margin as JSON: bytes, percent (3 decimals), covered (never for a failed run)."""
    if m is None:
        return None
    covered = m.covered and failed is None
    return {"bytes": m.bytes, "percent": round(m.percent, 3), "covered": covered}


def peak_json(peak: MeasuredPeak, estimate_bytes: int | None = None) -> dict[str, Any]:
    """The one JSON of a measured peak beside its estimate (`measure --json`, a split's
    every rank): the engine and what its peak counts, the estimate (the peak's own, else
    `estimate_bytes`) and the formula it is, the measured record, the margin."""
    return {
        "engine": peak.engine.value,
        "counted": peak.counted,
        "estimate_bytes": peak.estimate_bytes
        if peak.estimate_bytes is not None
        else estimate_bytes,
        "estimate_backend": peak.estimate_backend.value,
        "measured": peak.to_dict(),
        "margin": margin_json(peak.margin, peak.failed_status),
    }


def comparison_lines(peak: MeasuredPeak) -> list[str]:
    """The estimate and the measured peak side by side, then how the run went."""
    formula = peak.estimate_backend.label
    lines = [
        f"Model:          {clean_text(peak.model)}"
        + (f"  ({peak.family})" if peak.family else "")
        + ("  [synthetic weights]" if peak.synthetic_weights else ""),
        f"Engine:         {peak.engine_label}"
        + (" (emulating MLX-ROCm's in-flight queue)" if peak.emulated_queue else "")
        + (f"; {peak.attention_label}" if peak.attention_label else ""),
        f"Device:         {device_line(peak)}",
        *_workload_lines(peak),
    ]
    if peak.estimate_bytes is not None:
        lines.append(
            f"Estimate:       {format_bytes(peak.estimate_bytes)} at {peak.context_tokens} tokens "
            f"({formula} formula)"
        )
    lines.append(f"Measured peak:  {format_bytes(peak.peak_bytes)}")
    lines.append(f"                {peak.peak_kind}")
    m = peak.margin
    if m is not None:
        lines.append(
            f"Margin:         {signed_bytes(m.bytes)} bytes ({m.percent:+.1f}% of the peak), "
            f"{covered_words(m, failed=peak.failed_status)}"
        )
    if peak.engine is Engine.EXTERNAL:
        return lines + _external_lines(peak)
    return lines + _engine_lines(peak)


def _workload_lines(peak: MeasuredPeak) -> list[str]:
    if peak.engine is Engine.EXTERNAL:
        fields = peak.fields
        command = fields.command if isinstance(fields, ExternalFields) else ""
        return [
            f"Command:        {clean_text(command)}",
            f"Context:        {peak.context_tokens} tokens, {peak.kv_cache_mode} KV; "
            f"{budget_text(peak)}",
        ]
    return [
        f"Workload:       pp{peak.prompt_tokens} / tg{peak.gen_tokens} after a warm-up pass "
        f"(prefill + {peak.warmup_tokens} tokens), {peak.kv_cache_mode} KV; "
        f"{budget_text(peak)}",
    ]


def _external_lines(peak: MeasuredPeak) -> list[str]:
    """What `vramscope run` read beside the headline figure."""
    fields = peak.fields
    if not isinstance(fields, ExternalFields):
        return []
    lines = []
    if fields.host_peak_bytes is not None:
        lines.append(
            f"Host peak:      {format_bytes(fields.host_peak_bytes)} (the sum of its "
            "processes' VmHWM at a sample; the runtime's own resident memory included)"
        )
    if fields.drm_vram_peak_bytes is not None and fields.drm_gtt_peak_bytes is not None:
        lines.append(
            f"DRM memory:     VRAM {format_bytes(fields.drm_vram_peak_bytes)}, GTT "
            f"{format_bytes(fields.drm_gtt_peak_bytes)} (amdgpu fdinfo, each client once)"
        )
    if fields.card_used_delta_bytes is not None:
        lines.append(
            f"Card used Δ:    {format_bytes(fields.card_used_delta_bytes)} (sysfs VRAM + GTT; "
            "other processes count)"
        )
    if fields.nvml_peak_bytes is not None:
        lines.append(f"NVML:           {format_bytes(fields.nvml_peak_bytes)} (per-process used)")
    status = "?" if fields.exit_status is None else str(fields.exit_status)
    lines.append(
        f"Run:            exit status {status}, {fields.wall_seconds:.2f} s, "
        f"{fields.samples} samples every {fields.interval_s:g} s"
    )
    return lines


def _engine_lines(peak: MeasuredPeak) -> list[str]:
    """An engine's own figures beside its headline peak."""
    lines = []
    if peak.weights_bytes is not None:
        lines.append(f"Weights held:   {format_bytes(peak.weights_bytes)}")
    if peak.active_bytes is not None and peak.cache_bytes is not None:
        lines.append(
            f"At the end:     {format_bytes(peak.active_bytes)} active, "
            f"{format_bytes(peak.cache_bytes)} in MLX's buffer cache"
        )
    if peak.active_plus_cache_peak_bytes is not None:
        lines.append(
            f"Active + cache: {format_bytes(peak.active_plus_cache_peak_bytes)} "
            "(MLX's largest active + freed-buffer cache, sampled at every step)"
        )
    if peak.os_peak_bytes is not None:
        source = f" ({clean_text(peak.os_peak_source)})" if peak.os_peak_source else ""
        lines.append(f"OS peak:        {format_bytes(peak.os_peak_bytes)}{source}")
    if peak.reserved_peak_bytes is not None:
        lines.append(f"Reserved peak:  {format_bytes(peak.reserved_peak_bytes)}")
    if peak.device_used_delta_bytes is not None:
        source = f" ({peak.device_used_source})" if peak.device_used_source else ""
        lines.append(f"Device used Δ:  {format_bytes(peak.device_used_delta_bytes)}{source}")
    lines.append(
        f"Speed:          load {peak.load_seconds:.2f} s, prefill "
        f"{peak.prefill_tokens_per_s:.1f} tok/s, decode {peak.decode_tokens_per_s:.1f} tok/s"
    )
    return lines


@dataclass(frozen=True)
class TableRow:
    """One cell of the sweep: a model at a context and budget on an engine, and what
    happened."""

    model: str
    context: int
    budget_mib: int
    estimate_bytes: int | None
    outcome: MeasuredPeak | MeasurementFailure
    requested_engine: Engine = DEFAULT_ENGINE
    """The engine asked for (a measured row names its own: `engine`); a name is taken."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "requested_engine", Engine.named(self.requested_engine))

    @property
    def engine(self) -> Engine:
        """The peak's own engine, else the one asked for."""
        if isinstance(self.outcome, MeasuredPeak):
            return self.outcome.engine
        return self.requested_engine

    @property
    def has_queue(self) -> bool:
        """Whether the run had an in-flight queue: the torch engine's emulated one
        (unless it ran without, as on CUDA by default); MLX's only on ROCm. A failed run
        is counted as having one when its engine emulates one."""
        if not isinstance(self.outcome, MeasuredPeak):
            return self.engine.spec.emulates_rocm_queue
        return self.outcome.missing_queue is None

    @property
    def modelled(self) -> bool:
        """Whether the estimate models this run: not when a queue ran with its bound off."""
        return not self.has_queue or self.budget_mib > 0


def _covered(row: TableRow) -> bool | None:
    """None for a run with no verdict: failed (no peak, or the command did not end
    well) or without an estimate."""
    if not isinstance(row.outcome, MeasuredPeak) or row.estimate_bytes is None:
        return None
    if row.outcome.failed_status is not None:
        return None
    return margin(row.estimate_bytes, row.outcome.peak_bytes).covered


def _unmeasured(row: TableRow) -> bool:
    """A run that ended before anything of it was read: no peak, not a failure."""
    outcome = row.outcome
    return isinstance(outcome, MeasurementFailure) and outcome.kind is FailureKind.NOT_MEASURED


def _failed(row: TableRow) -> bool:
    outcome = row.outcome
    if isinstance(outcome, MeasurementFailure):
        return not _unmeasured(row) or outcome.exit_status not in (None, 0)
    return outcome.failed_status is not None


def _no_peak_cell(failure: MeasurementFailure) -> str:
    """The peak cell of a row without one: `not measured` (with the command's status
    when it failed), else `failed: WHY`."""
    if failure.kind is not FailureKind.NOT_MEASURED:
        return f"failed: {failure.kind.label}"
    if failure.exit_status in (None, 0):
        return "not measured"
    return f"not measured ({status_words(failure.exit_status)})"


def _device_columns(peak: MeasuredPeak) -> str:
    reserved = f"{peak.reserved_peak_bytes:,}" if peak.reserved_peak_bytes is not None else "-"
    used = f"{peak.device_used_delta_bytes:,}" if peak.device_used_delta_bytes is not None else "-"
    return f" {reserved} | {used} |"


def _budget_cell(row: TableRow) -> str:
    if not row.has_queue and (isinstance(row.outcome, MeasuredPeak) or _unmeasured(row)):
        return "n/a (no queue)"
    return f"{row.budget_mib}" if row.budget_mib else "0 (off)"


def markdown_table(
    rows: Sequence[TableRow], title: str, preamble: Sequence[str] = (), formulas: bool = False
) -> str:
    """mlxcel's "Estimate against peak" table: bytes, covered or not, smallest margin,
    with the engine of every row; when both engines ran, their peaks side by side.

    On a GPU two more columns show the allocator's reserved peak and the sampled
    device-level rise in used memory. With `formulas` (the explorer's export, whose rows
    may mix them) two columns after the engine name each row's estimate formula (the
    backend it is held against) and KV cache mode.
    """
    gpu = any(
        isinstance(r.outcome, MeasuredPeak) and r.outcome.device_kind is not Backend.CPU
        for r in rows
    )
    out = [f"## {title}", ""]
    out += [*preamble, ""] if preamble else []
    extra = " Formula | KV |" if formulas else ""
    head = (
        f"| Model | Engine |{extra} Context | Budget (MiB) | Measured peak (bytes) "
        "| Estimate (bytes) | Margin (bytes) | Margin | Covered |"
    )
    rule = "|---|---|" + ("---|---|" if formulas else "") + "---:|---:|---:|---:|---:|---:|---|"
    if gpu:
        head += " Reserved peak (bytes) | Device used Δ (bytes) |"
        rule += "---:|---:|"
    out += [head, rule]
    for row in rows:
        est = f"{row.estimate_bytes:,}" if row.estimate_bytes is not None else "-"
        engine = row.engine.label
        if formulas:
            engine += " | " + _formula_cells(row)
        lead = f"| {md_cell(row.model)} | {engine} | {row.context} | {_budget_cell(row)} |"
        if isinstance(row.outcome, MeasurementFailure):
            tail = " - | - |" if gpu else ""
            out.append(f"{lead} {_no_peak_cell(row.outcome)} | {est} | - | - | - |{tail}")
            continue
        peak = row.outcome.peak_bytes
        tail = _device_columns(row.outcome) if gpu else ""
        if row.estimate_bytes is None:
            out.append(f"{lead} {peak:,} | - | - | - | - |{tail}")
            continue
        m = margin(row.estimate_bytes, peak)
        out.append(
            f"{lead} {peak:,} | {est} | {signed_bytes(m.bytes)} | {m.percent:+.1f}% "
            f"| {covered_cell(m.covered, failed=row.outcome.failed_status)} |{tail}"
        )
    out += ["", summary_line(rows)]
    side = engines_side_by_side(rows)
    if side:
        out += ["", *side]
    return "\n".join(out) + "\n"


def _formula_cells(row: TableRow) -> str:
    """`ROCm | fp16`: the backend whose formula the row's estimate is, and its KV mode."""
    if not isinstance(row.outcome, MeasuredPeak):
        return "- | -"
    return f"{row.outcome.estimate_backend.label} | {row.outcome.kv_cache_mode}"


def _engines(rows: Sequence[TableRow]) -> list[Engine]:
    return list(dict.fromkeys(r.engine for r in rows))


def summary_line(rows: Sequence[TableRow]) -> str:
    """Per engine: how many rows the estimate models and covers, and the smallest margin."""
    engines = _engines(rows) or [DEFAULT_ENGINE]
    parts = [_engine_summary([r for r in rows if r.engine == e], e) for e in engines]
    off = [r for r in rows if not r.modelled and _covered(r) is not None]
    failed = sum(1 for r in rows if _failed(r))
    unmeasured = sum(1 for r in rows if _unmeasured(r))
    text = " ".join(parts)
    if off:
        text += f" {len(off)} row(s) ran with the bound off (0), which the estimate does not model."
    if failed:
        text += f" {failed} run(s) failed."
    if unmeasured:
        text += (
            f" {unmeasured} run(s) not measured (the command ended before the first "
            "sample): no peak, nothing covered."
        )
    return text


def _engine_summary(rows: Sequence[TableRow], engine: Engine) -> str:
    modelled = [r for r in rows if r.modelled and _covered(r) is not None]
    mlx = engine is Engine.MLX
    if not modelled:
        return "No MLX row was measured." if mlx else "No row with the bound on was measured."
    covered = sum(1 for r in modelled if _covered(r))
    smallest = min(modelled, key=lambda r: margin(r.estimate_bytes or 0, _peak(r)).bytes)
    m = margin(smallest.estimate_bytes or 0, _peak(smallest))
    where = f"{clean_text(smallest.model)}, {smallest.context} tokens" + (
        f", {smallest.budget_mib} MiB" if smallest.has_queue else ""
    )
    lead = (
        "Against MLX's own peaks, the estimate covers"
        if mlx
        else "With the bound on, the estimate covers"
    )
    noun = "MLX peaks" if mlx else "measured peaks"
    return (
        f"{lead} {covered} of {len(modelled)} {noun}; the smallest margin is "
        f"{m.bytes:,} bytes ({where})."
    )


def engines_side_by_side(rows: Sequence[TableRow]) -> list[str]:
    """Both engines' peaks for the same model and context, and how far apart they are
    (empty unless both engines measured something)."""
    mlx_rows = {
        (r.model, r.context): r
        for r in rows
        if r.engine is Engine.MLX and isinstance(r.outcome, MeasuredPeak)
    }
    pairs = [
        (r, mlx_rows[(r.model, r.context)])
        for r in rows
        if r.engine is Engine.TORCH
        and isinstance(r.outcome, MeasuredPeak)
        and (r.model, r.context) in mlx_rows
    ]
    if not pairs:
        return []
    out = [
        "### Engines side by side",
        "",
        "| Model | Context | Budget (MiB) | torch engine peak (bytes) | MLX peak (bytes) "
        "| torch − MLX (bytes) | torch / MLX | Estimate for torch (bytes) "
        "| Estimate for MLX (bytes) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for torch_row, mlx_row in pairs:
        t, x = _peak(torch_row), _peak(mlx_row)
        ratio = f"{t / x:.2f}x" if x else "-"
        t_est = f"{torch_row.estimate_bytes:,}" if torch_row.estimate_bytes is not None else "-"
        x_est = f"{mlx_row.estimate_bytes:,}" if mlx_row.estimate_bytes is not None else "-"
        out.append(
            f"| {md_cell(torch_row.model)} | {torch_row.context} | {_budget_cell(torch_row)} "
            f"| {t:,} "
            f"| {x:,} | {signed_bytes(t - x)} | {ratio} | {t_est} | {x_est} |"
        )
    return out


def _peak(row: TableRow) -> int:
    assert isinstance(row.outcome, MeasuredPeak)
    return row.outcome.peak_bytes
