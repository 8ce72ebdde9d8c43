"""The load in words and JSON, beside mlxcel's estimate (never in place of a line or key).

`load_line` is `inspect`'s `vramscope: load (mlx-lm): ...` line; `why_differs` names,
in one line, why the load and mlxcel's total differ by more than 5% (sliding layers,
state layers, a KV width the weights give and the config does not, the terms mlxcel
adds); `load_json` is the `load` object of `inspect --json`.
"""

from __future__ import annotations

from typing import Any

from core.estimate.estimate import MemoryEstimate
from core.load.caches import CacheKind
from core.load.load import EngineLoad, LoadTerm, Sourced
from core.load.mlx_lm import MlxLmPlan
from core.units import format_bytes_short

DIFFERS_BY = 0.05
"""The load and mlxcel's total differ enough to say why: more than 5% of mlxcel's."""


def load_line(load: EngineLoad, verdict: str) -> str:
    """`load (mlx-lm): weights 8.01 GiB, KV 756.0 MiB, transient 3.33 GiB, total 12.16
    GiB: FITS`; `verdict` as `core.answer.verdict.load_verdict_words` words it (the one
    wording: this package sits below the answer)."""
    return (
        f"load ({load.engine.label}): weights {format_bytes_short(load.weights_bytes)}, "
        f"KV {format_bytes_short(load.kv_bytes)}, transient "
        f"{format_bytes_short(load.transient_bytes)}, total "
        f"{format_bytes_short(load.total_bytes)} ({load.total_bytes:,} bytes) at "
        f"{load.tokens:,} tokens: {verdict}"
    )


def why_differs(plan: MlxLmPlan, load: EngineLoad, est: MemoryEstimate) -> str | None:
    """One line naming why the load and mlxcel's total differ, None within 5%."""
    if abs(load.total_bytes - est.total_bytes) <= est.total_bytes * DIFFERS_BY:
        return None
    n = len(plan.caches)
    reasons: list[str] = []
    for window in sorted({c.window for c in plan.caches if c.kind is CacheKind.ROTATING}):
        count = sum(c.kind is CacheKind.ROTATING and c.window == window for c in plan.caches)
        reasons.append(f"{count} of {n} layers are sliding-window ({window:,} tokens)")
    if plan.state_layers:
        reasons.append(f"{plan.state_layers} of {n} layers hold a fixed linear-attention state")
    attention = [c for c in plan.caches if c.kind is not CacheKind.ARRAYS]
    if attention and est.kv.per_token_bytes:
        # A token over every attention layer, as if each held it: what mlxcel's
        # per-token figure counts, read from the weights instead of config.json.
        ours = plan.batch * sum(c.token_bytes() for c in attention)
        if ours != est.kv.per_token_bytes:
            c = attention[0]
            reasons.append(
                f"a token of KV is {ours:,} bytes over {len(attention)} layers "
                f"({c.k_heads} KV heads of {c.k_dim}), mlxcel counts {est.kv.per_token_bytes:,}"
            )
    added = est.allocator_overhead_bytes + est.activation_bytes
    if added:
        reasons.append(
            f"mlxcel adds {format_bytes_short(added)} of allocator overhead and activation; "
            f"the load's transients are {format_bytes_short(load.transient_bytes)}"
        )
    return (
        f"load vs mlxcel's estimate: {format_bytes_short(load.total_bytes)} vs "
        f"{format_bytes_short(est.total_bytes)}: " + "; ".join(reasons)
    )


def term_json(term: LoadTerm) -> dict[str, Any]:
    """One term in a `load` object (every engine's)."""
    return {
        "kind": term.kind.value,
        "bytes": term.bytes,
        "origin": term.origin.name.lower(),
        "detail": term.detail,
    }


def source_json(source: Sourced) -> dict[str, Any]:
    """One dimension and where it came from, in a `load` object (every engine's)."""
    return {
        "name": source.name,
        "value": source.value,
        "origin": source.origin.name.lower(),
        "detail": source.detail,
    }


def load_json(
    load: EngineLoad,
    fits: bool | None,
    largest_context: dict[str, Any] | None,
    why: str | None,
    mlxcel_refuses: bool,
) -> dict[str, Any]:
    """The `load` object of `inspect --json` (after mlxcel's keys)."""
    return {
        "engine": load.engine.label,
        "tokens": load.tokens,
        "weights_bytes": load.weights_bytes,
        "kv_bytes": load.kv_bytes,
        "transient_bytes": load.transient_bytes,
        "total_bytes": load.total_bytes,
        "fits": fits,
        "mlxcel_refuses": mlxcel_refuses,
        "largest_context": largest_context,
        "terms": [term_json(t) for t in load.terms],
        "sources": [source_json(s) for s in load.sources],
        "notes": list(load.notes),
        "differs_from_mlxcel": why,
    }
