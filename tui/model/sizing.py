"""What mlxcel would size from this estimate: the paged-KV `auto` budget, the prompt-cache
capacity and `--recommend-quant`'s answer (`core.estimate.downstream`,
`core.estimate.prompt_cache`).

None of these changes the total; they are what mlxcel derives from it, shown in
the explorer's estimate panel ("mlxcel would size …") and in
`vramscope inspect --verbose`. Each follows mlxcel's own inputs (spec §1.7):
8192 tokens for the auto budget and the quant advice, batch 1 and fp16 KV.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.backend import Backend
from core.estimate.available import AvailableMemory
from core.estimate.downstream import (
    QuantRecommendation,
    auto_kv_budget_bytes,
    blocks_for_budget,
    paged_block_bytes,
    paged_v2_workspace_reserve_bytes,
    recommend_quantization,
)
from core.estimate.estimate import DEFAULT_CTX_LEN, EstimateSettings, Workload, estimate
from core.estimate.prompt_cache import PromptCacheCapacity, prompt_cache_capacity
from core.estimate.snapshot import ModelSnapshot
from core.units import GIB, format_bytes_short

if TYPE_CHECKING:
    from core.answer.advice import Advice

PAGED_BLOCK_TOKENS = 16
"""The paged pool's block size in tokens (mlxcel's default)."""


@dataclass(frozen=True)
class MlxcelSizing:
    """The sizes mlxcel derives from an estimate."""

    kv_budget_bytes: int
    """`--kv-cache-budget auto`: KV bytes left once weights, activation and in-flight fit."""
    paged_blocks: int | None
    """Whole 16-token blocks of one layer in that budget after the v2 workspace reserve."""
    workspace_bytes: int
    prompt_cache: PromptCacheCapacity
    quant: QuantRecommendation


def mlxcel_sizing(
    snapshot: ModelSnapshot, settings: EstimateSettings, max_tokens: int, batch: int = 1
) -> MlxcelSizing:
    """mlxcel's derived sizes for a model against `settings` (the explorer's or inspect's)."""
    at_8k = estimate(snapshot, Workload(DEFAULT_CTX_LEN, max(batch, 1)), settings)
    budget = auto_kv_budget_bytes(
        settings.available.bytes,
        at_8k.weights_bytes,
        at_8k.activation_bytes,
        at_8k.backend_inflight_bytes,
        settings.headroom_factor,
    )
    workspace = paged_v2_workspace_reserve_bytes(snapshot.config, batch)
    layers = sum(g.layers for g in snapshot.kv_arch.groups) if snapshot.kv_arch else 0
    per_token = at_8k.kv.per_token_bytes if at_8k.kv.available else None
    per_block = paged_block_bytes(
        per_token // max(batch, 1) if per_token else None, layers, PAGED_BLOCK_TOKENS
    )
    blocks = blocks_for_budget(budget, per_block, workspace) if per_block else None
    advice = estimate(snapshot, Workload(DEFAULT_CTX_LEN), settings)
    kv_known = advice.kv.available
    unified_gb = settings.available.bytes // GIB if settings.backend is Backend.METAL else 0
    quant = recommend_quantization(
        advice.weights_bytes / 2 / 1e9, unified_gb, advice.kv.bytes if kv_known else None
    )
    cache = prompt_cache_capacity(snapshot, settings, max_tokens)
    return MlxcelSizing(budget, blocks, workspace, cache, quant)


def sizing_line(s: MlxcelSizing) -> str:
    """The explorer's `mlxcel would size` line: `paged KV auto 58.93 GiB (965,249 blocks) · …`."""
    blocks = f" ({s.paged_blocks:,} blocks)" if s.paged_blocks is not None else ""
    cache = format_bytes_short(s.prompt_cache.capacity_bytes)
    return (
        f"paged KV auto {format_bytes_short(s.kv_budget_bytes)}{blocks}"
        f" · prompt cache {s.prompt_cache.store} {cache}"
        f" · --recommend-quant {s.quant.quant}"
    )


def sizing_lines(
    s: MlxcelSizing, available: AvailableMemory, advice: Advice | None = None
) -> list[str]:
    """`inspect --verbose`'s section, one fact a line; mlxcel's `--recommend-quant` is
    labelled as mlxcel's rule (off Apple it always says INT4, whatever the model is), and
    vramscope's `advice` (which never suggests what the model already is) follows it."""
    blocks = "n/a (no KV geometry)" if s.paged_blocks is None else f"{s.paged_blocks:,}"
    return [
        "=== What mlxcel would size ===",
        f"  Paged KV budget (auto):   {s.kv_budget_bytes:,} bytes"
        f" ({format_bytes_short(s.kv_budget_bytes)}) against {available.source}",
        f"  Paged blocks ({PAGED_BLOCK_TOKENS} tokens): {blocks}"
        f" after the v2 workspace reserve of {s.workspace_bytes:,} bytes",
        f"  Prompt cache:             {s.prompt_cache.store} store,"
        f" {s.prompt_cache.capacity_bytes:,} bytes"
        f" (entry {s.prompt_cache.entry_bytes:,} bytes)",
        f"  --recommend-quant:        {s.quant.quant.upper()} ({s.quant.reason})"
        + ("; mlxcel's rule, blind to how the model is stored" if advice is not None else ""),
        *(
            [f"  vramscope's advice:       {advice.stored_words}; {line}" for line in advice.lines]
            if advice is not None
            else []
        ),
    ]
