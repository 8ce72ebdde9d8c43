"""A run's result as `measure` prints it, for one device and for a split: one presenter
for the text (`run_lines`) and one for `--json` (`run_json`), both of the one outcome
(`core.measurement.run.MeasuredRun` or the failure).

Imported only when a run is made (it reaches hip_backend's prepared types).
"""

from __future__ import annotations

from typing import Any

from core.measurement.engine import Engine
from core.measurement.fields import RankFields
from core.measurement.report import comparison_lines, peak_json
from core.measurement.result import MeasuredPeak
from core.measurement.run import MeasuredRun, RunOutcome
from hip_backend import PreparedMeasurement, PreparedParallel

Prepared = PreparedMeasurement | PreparedParallel


def run_lines(prepared: Prepared, run: MeasuredRun) -> list[str]:
    """The estimate beside the measured peak: the comparison of one device, or the
    split's plan and one table row per rank."""
    if isinstance(prepared, PreparedParallel):
        return _split_lines(prepared, run)
    return comparison_lines(run.peak)


def run_json(prepared: Prepared, outcome: RunOutcome) -> dict[str, Any]:
    """The `--json` document: what was measured, the estimate each peak is held
    against, the margin (one device); the plan and one entry per rank (a split); the
    failure in place of the peaks."""
    if isinstance(prepared, PreparedParallel):
        return _split_json(prepared, outcome)
    engine = prepared.request.engine
    if not isinstance(outcome, MeasuredRun):
        return {
            "engine": engine.value,
            "estimate_bytes": prepared.estimate.total_bytes,
            "error": outcome.to_dict(),
        }
    return peak_json(outcome.peak, prepared.estimate.total_bytes)


def launcher_text(prepared: PreparedParallel) -> str:
    """How the ranks were placed: the loopback, or the hostfile's hosts."""
    hf = prepared.hostfile
    if hf is None:
        return f"mlx.launch --backend ring -n {prepared.plan.ranks} on the loopback"
    hosts = ", ".join(dict.fromkeys(h.ssh for h in hf.hosts))
    return f"mlx.launch --backend ring --hostfile {hf.path} (hosts: {hosts})"


def _split_lines(prepared: PreparedParallel, run: MeasuredRun) -> list[str]:
    first = run.peak
    req = prepared.request
    lines = [
        f"Model:     {req.model}  ({prepared.estimate.family}, {prepared.plan.kind.label}, "
        f"{prepared.plan.ranks} ranks)"
        + ("  [synthetic weights]" if first.synthetic_weights else ""),
        f"Launch:    {launcher_text(prepared)}; {first.device_name}, {first.runtime_version}",
        f"Workload:  pp{req.prompt_tokens} / tg{req.gen_tokens} after a warm-up pass "
        f"({req.warmup_tokens} tokens); estimate for {prepared.backend.label} at "
        f"{req.context_tokens} tokens",
        "Peak:      mx.get_peak_memory() of each rank (load + workload); estimate = the rank's "
        "max(load peak, running total)",
        "",
        "| Rank | Holds | Estimate (bytes) | Measured peak (bytes) | Margin (bytes) | Covered "
        "| Weights held (bytes) |",
        "|---:|---|---:|---:|---:|---|---:|",
    ]
    for peak, rank in zip(run.ranks, prepared.estimate.ranks, strict=True):
        m = peak.margin
        holds = (
            f"layers {rank.layers[0]}-{rank.layers[1] - 1}"
            if rank.layers is not None
            else f"1/{prepared.plan.ranks}, {rank.kv_heads} KV heads"
        )
        lines.append(
            f"| {rank.rank} | {holds} | {peak.estimate_bytes or 0:,} | {peak.peak_bytes:,} | "
            f"{(m.bytes if m else 0):+,} | {'yes' if m and m.covered else 'NO'} | "
            f"{peak.weights_bytes or 0:,} |"
        )
    wall = run.wall_seconds or 0.0
    lines += [
        "",
        f"Single device estimate: {prepared.estimate.single.total_bytes:,} bytes; "
        f"wall time of the {prepared.plan.ranks}-rank run: {wall:.2f} s",
    ]
    return lines


def _split_json(prepared: PreparedParallel, outcome: RunOutcome) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "parallel": {"kind": prepared.plan.kind.value, "ranks": prepared.plan.ranks},
        "engine": Engine.MLX.value,
        "launcher": launcher_text(prepared),
        "estimate_backend": prepared.backend.value,
        "single_device_estimate_bytes": prepared.estimate.single.total_bytes,
        "estimate_bytes": [r.peak_bytes for r in prepared.estimate.ranks],
    }
    if not isinstance(outcome, MeasuredRun):
        doc["error"] = outcome.to_dict()
        return doc
    doc["wall_seconds"] = round(outcome.wall_seconds or 0.0, 3)
    doc["ranks"] = [{"rank": _rank(peak)} | peak_json(peak) for peak in outcome.ranks]
    return doc


def _rank(peak: MeasuredPeak) -> int | None:
    fields = peak.fields
    return fields.rank if isinstance(fields, RankFields) else None
