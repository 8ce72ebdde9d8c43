"""Text and JSON renderings of a per-rank (tensor- or pipeline-parallel) estimate."""

from __future__ import annotations

from typing import Any

from core.estimate.kv_cache import kv_term
from core.estimate.report import format_estimate, inspect_report
from core.estimate.snapshot import ModelSnapshot
from core.parallel.plan import ParallelEstimate, RankEstimate
from core.parallel.sharding import MLX_LM_VERSION, ParallelKind
from core.units import format_bytes


def _rank_scope(pe: ParallelEstimate, rank: RankEstimate) -> str:
    if rank.layers is not None:
        start, end = rank.layers
        return f"layers {start}-{end - 1} + embeddings, final norm and LM head"
    return f"1/{pe.plan.ranks} of every attention and MLP linear, {rank.kv_heads} KV heads"


def _load_note(pe: ParallelEstimate) -> str:
    if pe.plan.kind is ParallelKind.TENSOR:
        return "sharded_load reads every tensor whole before slicing it"
    return "only this rank's layers are read"


def format_parallel(display: str, pe: ParallelEstimate) -> str:
    """One banner per rank, then the plan's verdict."""
    n = pe.plan.ranks
    out = [
        f"=== Parallel plan: {pe.plan.kind.label}, {n} ranks "
        f"(mlx-lm {MLX_LM_VERSION} sharding of '{pe.family}') ===\n",
        f"  Single device:   {format_bytes(pe.single.total_bytes)}\n\n",
    ]
    for rank in pe.ranks:
        out.append(f"--- Rank {rank.rank} of {n}: {_rank_scope(pe, rank)} ---\n")
        out.append(
            f"  Weights split:   {format_bytes(rank.sharded_weight_bytes)} "
            f"{'sharded' if pe.plan.kind is ParallelKind.TENSOR else 'own layers'}"
            f" + {format_bytes(rank.replicated_weight_bytes)} replicated\n"
        )
        out.append(f"  Load peak:       {format_bytes(rank.load_peak_bytes)}  ({_load_note(pe)})\n")
        out.append(format_estimate(f"{display} (rank {rank.rank} of {n})", rank.estimate))
        out.append("  (the running total above; the rank must also hold its load peak)\n\n")
    out.append(f"=== Plan ({pe.plan.flag}) ===\n")
    for rank in pe.ranks:
        verdict = (
            f"FITS: {format_bytes(rank.slack_bytes)} of headroom"
            if rank.fits
            else f"DOES NOT FIT: {format_bytes(rank.overflow_bytes)} over budget"
        )
        which = "load" if rank.load_peak_bytes > rank.estimate.total_bytes else "run"
        out.append(
            f"  Rank {rank.rank}: peak {format_bytes(rank.peak_bytes)} ({which}) of "
            f"{format_bytes(rank.estimate.available_bytes)}  {verdict}\n"
        )
    if pe.fits:
        out.append(f"  PLAN FITS: every one of the {n} ranks fits\n")
    else:
        failing = ", ".join(str(r) for r in pe.failing_ranks)
        out.append(f"  PLAN DOES NOT FIT: rank(s) {failing} over budget\n")
    return "".join(out)


def _rank_report(model: ModelSnapshot, rank: RankEstimate, version: str) -> dict[str, Any]:
    report = inspect_report(model, rank.estimate, version)
    report["kv_bytes_per_token"] = {
        "fp16": kv_term(rank.kv_arch, 1, False, 1).per_token_bytes,
        "int8": kv_term(rank.kv_arch, 1, True, 1).per_token_bytes,
        "turbo4": None,
    }
    report["rank"] = rank.rank
    report["layers"] = list(rank.layers) if rank.layers is not None else None
    report["kv_heads"] = rank.kv_heads
    report["sharded_weight_bytes"] = rank.sharded_weight_bytes
    report["replicated_weight_bytes"] = rank.replicated_weight_bytes
    report["load_peak_bytes"] = rank.load_peak_bytes
    report["peak_bytes"] = rank.peak_bytes
    report["fits"] = rank.fits
    report["slack_bytes"] = rank.slack_bytes
    report["overflow_bytes"] = rank.overflow_bytes
    return report


def parallel_report(model: ModelSnapshot, pe: ParallelEstimate, version: str) -> dict[str, Any]:
    """Plan totals beside a `ranks` list (each with the single-device report's keys)."""
    wl = pe.single.workload
    return {
        "vramscope_version": version,
        "model": model.display,
        "model_type": model.model_type,
        "family": model.family,
        "inputs": {
            "max_tokens": wl.max_tokens,
            "batch": wl.batch,
            "kv_cache_mode": wl.kv_cache_mode.value,
            "quant": wl.quant.json_label,
        },
        "parallel": {
            "kind": pe.plan.kind.value,
            "ranks": pe.plan.ranks,
            "mlx_lm_family": pe.family,
            "mlx_lm_version": MLX_LM_VERSION,
        },
        "single_device_total_bytes": pe.single.total_bytes,
        "weights_bytes": pe.weights_bytes,
        "kv_bytes_total": pe.kv_bytes,
        "total_bytes": pe.total_bytes,
        "budget_bytes": pe.available_bytes,
        "fits": pe.fits,
        "failing_ranks": list(pe.failing_ranks),
        "ranks": [_rank_report(model, r, version) for r in pe.ranks],
    }
