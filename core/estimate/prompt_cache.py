"""Prompt-cache capacity defaults (mlxcel's `snapshot_sizing.rs`).

The capacity is six entries of a representative context, capped at a quarter of
the memory the estimate leaves (its slack), so on ROCm the in-flight reserve
lowers the ceiling by a quarter of the budget.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.estimate.downstream import (
    KV_STORE_DEFAULT_BYTES,
    SNAPSHOT_STORE_DEFAULT_BYTES,
    bounded_capacity,
    qwen3_next_fixed_state_bytes,
    representative_tokens,
)
from core.estimate.estimate import EstimateSettings, Workload, estimate
from core.estimate.kv_cache import KvArch, KvKind, kv_term
from core.estimate.snapshot import ModelSnapshot
from core.kind import Kind

SNAPSHOT_FAMILIES = frozenset(
    {
        "gemma3",
        "gemma4",
        "gemma4_unified",
        "llama4",
        "afmoe",
        "inkling",
        "inkling_mm_model",
        "jamba",
        "falcon_h1",
        "lfm2",
        "bailing_moe_linear",
        "nemotron_h",
        "mamba",
        "mamba2",
        "granitemoehybrid",
        "muse_glimmer",
        "plamo2",
    }
)
FIXED_STATE_FAMILIES = frozenset({"qwen3_next", "qwen3_5", "qwen3_5_moe"})


class PromptCacheStore(Kind):
    """Which prompt-cache store mlxcel gives a model (the value is its word)."""

    SNAPSHOT = "snapshot"
    """Recurrent, hybrid and model-aware families."""
    KV = "kv"
    """Dense models."""


@dataclass(frozen=True)
class PromptCacheCapacity:
    """Which store a model uses and its default byte capacity."""

    store: PromptCacheStore
    entry_bytes: int
    capacity_bytes: int


def _model_types(model: ModelSnapshot) -> set[str]:
    types: set[str] = set()
    if model.config is None:
        return types
    for obj in (model.config.root, model.config.text):
        value = obj.get("model_type")
        if isinstance(value, str):
            types.add(value.lower().removesuffix("_text"))
    return types


def _unwindowed(arch: KvArch | None) -> KvArch | None:
    if arch is None:
        return None
    return replace(arch, groups=tuple(replace(g, window=None) for g in arch.groups))


def prompt_cache_capacity(
    model: ModelSnapshot, settings: EstimateSettings, context_size: int, current: int | None = None
) -> PromptCacheCapacity:
    """The default capacity when neither the environment nor a flag sets one."""
    tokens = representative_tokens(context_size)
    est = estimate(model, Workload(max_tokens=tokens), settings)
    left = est.slack_bytes if est.available_bytes > 0 else None
    types = _model_types(model)
    fixed = (
        qwen3_next_fixed_state_bytes(model.config)
        if model.config is not None and types & FIXED_STATE_FAMILIES
        else 0
    )
    kind = model.kv_arch.kind if model.kv_arch else None
    if fixed > 0 or kind in (KvKind.HYBRID, KvKind.PURE_SSM) or types & SNAPSHOT_FAMILIES:
        entry = kv_term(_unwindowed(model.kv_arch), tokens, False, 1).bytes + fixed
        default = SNAPSHOT_STORE_DEFAULT_BYTES if current is None else current
        return PromptCacheCapacity(
            PromptCacheStore.SNAPSHOT, entry, bounded_capacity(entry, default, left)
        )
    entry = kv_term(model.kv_arch, tokens, False, 1).bytes
    default = KV_STORE_DEFAULT_BYTES if current is None else current
    return PromptCacheCapacity(PromptCacheStore.KV, entry, bounded_capacity(entry, default, left))
