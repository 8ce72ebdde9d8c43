"""Text for measured peaks: the side-by-side comparison and the sweep table.

Pure formatting over `core.measurement` values, shared by `vramscope measure`,
`vramscope table` and scripts/gpu_table.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.measurement import MeasuredPeak, MeasurementFailure, margin
from core.units import format_bytes


def signed_bytes(n: int) -> str:
    """`+1,234,567` / `-1,234` with thousands separators."""
    return f"{n:+,}"


def comparison_lines(peak: MeasuredPeak) -> list[str]:
    """The estimate and the measured peak side by side, then how the run went."""
    lines = [
        f"Model:          {peak.model}"
        + (f"  ({peak.family})" if peak.family else "")
        + ("  [synthetic weights]" if peak.synthetic_weights else ""),
        f"Device:         {peak.device_kind} {peak.device_name}"
        + (f" ({peak.arch})" if peak.arch else "")
        + f", torch {peak.torch_version}"
        + (
            f", {'HIP' if peak.device_kind == 'rocm' else 'CUDA'} {peak.runtime_version}"
            if peak.runtime_version
            else ""
        ),
        f"Workload:       pp{peak.prompt_tokens} / tg{peak.gen_tokens} after a warm-up pass "
        f"(prefill + {peak.warmup_tokens} tokens); in-flight budget "
        + (f"{peak.inflight_mib} MiB" if peak.inflight_mib else "0 (bound off)"),
    ]
    if peak.estimate_bytes is not None:
        lines.append(
            f"Estimate:       {format_bytes(peak.estimate_bytes)} at {peak.context_tokens} tokens"
        )
    lines.append(f"Measured peak:  {format_bytes(peak.peak_bytes)}")
    lines.append(f"                {peak.peak_kind}")
    m = peak.margin
    if m is not None:
        verdict = "covered" if m.covered else "NOT covered"
        lines.append(
            f"Margin:         {signed_bytes(m.bytes)} bytes ({m.percent:+.1f}% of the peak), "
            f"{verdict}"
        )
    if peak.weights_bytes is not None:
        lines.append(f"Weights held:   {format_bytes(peak.weights_bytes)}")
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
    """One cell of the sweep: a model at a context and budget, and what happened."""

    model: str
    context: int
    budget_mib: int
    estimate_bytes: int | None
    outcome: MeasuredPeak | MeasurementFailure


def _covered(row: TableRow) -> bool | None:
    if not isinstance(row.outcome, MeasuredPeak) or row.estimate_bytes is None:
        return None
    return margin(row.estimate_bytes, row.outcome.peak_bytes).covered


def _device_columns(peak: MeasuredPeak) -> str:
    reserved = f"{peak.reserved_peak_bytes:,}" if peak.reserved_peak_bytes is not None else "-"
    used = f"{peak.device_used_delta_bytes:,}" if peak.device_used_delta_bytes is not None else "-"
    return f" {reserved} | {used} |"


def markdown_table(rows: Sequence[TableRow], title: str, preamble: Sequence[str] = ()) -> str:
    """mlxcel's "Estimate against peak" table: bytes, covered or not, smallest margin.

    On a GPU two more columns show the allocator's reserved peak and the sampled
    device-level rise in used memory.
    """
    gpu = any(isinstance(r.outcome, MeasuredPeak) and r.outcome.device_kind != "cpu" for r in rows)
    out = [f"## {title}", ""]
    out += [*preamble, ""] if preamble else []
    head = (
        "| Model | Context | Budget (MiB) | Measured peak (bytes) | Estimate (bytes) "
        "| Margin (bytes) | Margin | Covered |"
    )
    rule = "|---|---:|---:|---:|---:|---:|---:|---|"
    if gpu:
        head += " Reserved peak (bytes) | Device used Δ (bytes) |"
        rule += "---:|---:|"
    out += [head, rule]
    for row in rows:
        budget = f"{row.budget_mib}" if row.budget_mib else "0 (off)"
        est = f"{row.estimate_bytes:,}" if row.estimate_bytes is not None else "-"
        lead = f"| {row.model} | {row.context} | {budget} |"
        if isinstance(row.outcome, MeasurementFailure):
            tail = " - | - |" if gpu else ""
            out.append(f"{lead} failed: {row.outcome.kind.label} | {est} | - | - | - |{tail}")
            continue
        peak = row.outcome.peak_bytes
        tail = _device_columns(row.outcome) if gpu else ""
        if row.estimate_bytes is None:
            out.append(f"{lead} {peak:,} | - | - | - | - |{tail}")
            continue
        m = margin(row.estimate_bytes, peak)
        out.append(
            f"{lead} {peak:,} | {est} | {signed_bytes(m.bytes)} | {m.percent:+.1f}% "
            f"| {'yes' if m.covered else 'NO'} |{tail}"
        )
    out += ["", summary_line(rows)]
    return "\n".join(out) + "\n"


def summary_line(rows: Sequence[TableRow]) -> str:
    """How many bounded rows the estimate covers, and the smallest margin among them."""
    bounded = [r for r in rows if r.budget_mib > 0 and _covered(r) is not None]
    failed = sum(1 for r in rows if isinstance(r.outcome, MeasurementFailure))
    if not bounded:
        text = "No row with the bound on was measured."
    else:
        covered = sum(1 for r in bounded if _covered(r))
        smallest = min(
            bounded,
            key=lambda r: margin(r.estimate_bytes or 0, _peak(r)).bytes,
        )
        m = margin(smallest.estimate_bytes or 0, _peak(smallest))
        text = (
            f"With the bound on, the estimate covers {covered} of {len(bounded)} measured "
            f"peaks; the smallest margin is {m.bytes:,} bytes ({smallest.model}, "
            f"{smallest.context} tokens, {smallest.budget_mib} MiB)."
        )
    off = [r for r in rows if r.budget_mib == 0 and _covered(r) is not None]
    if off:
        text += f" {len(off)} row(s) ran with the bound off (0), which the estimate does not model."
    if failed:
        text += f" {failed} run(s) failed."
    return text


def _peak(row: TableRow) -> int:
    assert isinstance(row.outcome, MeasuredPeak)
    return row.outcome.peak_bytes
