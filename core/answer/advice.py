"""vramscope's advice for an answer: what would make it fit, never what the model already is.

mlxcel's own `--recommend-quant` (core.estimate.downstream) is kept as mlxcel's rule
(off Apple it always answers INT4, even for a model stored in 4 bits); this is
vramscope's: it looks at the model as stored and suggests only a quantization with
fewer bits than it has, a smaller context, an 8-bit KV cache or a split, each
checked against the same estimate. Where vramscope's own load exists (`Answer.load`),
the largest context advised is the load's, and where mlxcel's preflight refuses what
the load holds, the advice says so first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from core.answer.quantization import WHAT_IFS
from core.estimate.estimate import estimate
from core.model.config import as_u64
from core.units import format_bytes_short

if TYPE_CHECKING:
    from core.answer.answer import Answer

FLOAT_BITS = 16
MLXCEL_REFUSES = "mlxcel's preflight would refuse this; mlx-lm loads it"


def stored_bits(root: Mapping[str, Any] | None) -> int:
    """Bits per weight as stored: the quantization block's `bits`, else 16."""
    for key in ("quantization", "quantization_config"):
        block = root.get(key) if root is not None else None
        if isinstance(block, Mapping) and (bits := as_u64(block.get("bits"))) is not None:
            return bits
    return FLOAT_BITS


@dataclass(frozen=True)
class Advice:
    """What the answer suggests, one line each ("" lines are never made)."""

    stored_bits: int
    lines: tuple[str, ...]
    needed: bool = True
    """False when the answer fits as asked (the one line then says so)."""

    @property
    def stored_words(self) -> str:
        """`stored in 4 bits` or `stored in 16-bit floats`."""
        if self.stored_bits >= FLOAT_BITS:
            return f"stored in {self.stored_bits}-bit floats"
        return f"stored in {self.stored_bits} bits"


def advise(answer: Answer) -> Advice:
    """The advice for one answer."""
    config = answer.model.snapshot.config
    bits = stored_bits(config.root if config is not None else None)
    lines: list[str] = []
    q = answer.question
    tokens = q.workload.max_tokens
    context = answer.context
    if answer.fits is None or context.unread is not None:
        return Advice(bits, ())  # no split, or no memory read: nothing to advise from
    load = answer.load
    if load is not None and answer.mlxcel_refuses_load:
        free = q.settings.available.bytes - load.total_bytes
        lines.append(
            f"{MLXCEL_REFUSES} (vramscope's load {format_bytes_short(load.total_bytes)}, "
            f"{format_bytes_short(free)} free; mlxcel counts "
            f"{format_bytes_short(answer.estimate.total_bytes)})"
        )
        if answer.past_trained and context.trained is not None:
            lines.append(
                f"use at most {context.trained.tokens:,} tokens: {tokens:,} is past the "
                "trained context"
            )
        return Advice(bits, tuple(lines))
    context = answer.best_context
    if answer.fits and load is not None and answer.load_fits is False:
        over = load.total_bytes - q.settings.available.bytes
        line = (
            f"mlxcel's preflight passes, but vramscope's load is "
            f"{format_bytes_short(load.total_bytes)}, {format_bytes_short(over)} over"
        )
        if context.tokens:
            line += f": it fits at up to {context.tokens:,} tokens"
        lines.append(line)
        return Advice(bits, tuple(lines))
    if answer.fits:
        if answer.past_trained and context.trained is not None:
            lines.append(
                f"use at most {context.trained.tokens:,} tokens: {tokens:,} is past the "
                "trained context"
            )
        if not lines:
            slack = min(r.slack_bytes for r in answer.ranks)
            if load is not None:  # what the engine leaves free, not mlxcel's margin
                slack = q.settings.available.bytes - load.total_bytes
            lines.append(f"fits as asked, {format_bytes_short(slack)} free; nothing to change")
            return Advice(bits, tuple(lines), needed=False)
        return Advice(bits, tuple(lines))
    if context.tokens:
        trained = " (the trained context)" if context.capped else ""
        lines.append(f"fits at up to {context.tokens:,} tokens{trained}")
    if answer.single_device:
        settings = q.settings
        if answer.what_if is None:
            for scheme in WHAT_IFS:
                weights = answer.model.what_ifs.get(scheme)
                if scheme.bits is None or scheme.bits >= bits or not isinstance(weights, int):
                    continue  # never the quantization it has, nor one with more bits
                snap = replace(
                    answer.snapshot, weights=replace(answer.snapshot.weights, bytes=weights)
                )
                total = estimate(snap, q.workload, settings)
                if total.fits:
                    lines.append(
                        f"as {scheme.word} (mlx_lm.convert -q --q-bits {scheme.bits}) it fits: "
                        f"{format_bytes_short(total.total_bytes)}"
                    )
                    break
        if not q.workload.kv_int8:
            int8 = estimate(answer.snapshot, replace(q.workload, kv_int8=True), settings)
            if int8.fits:
                lines.append(
                    f"with an 8-bit KV cache (--kv-cache-mode int8) it fits: "
                    f"{format_bytes_short(int8.total_bytes)}"
                )
    if not lines:
        lines.append("does not fit even with an empty context: more memory or more devices")
    return Advice(bits, tuple(lines))
