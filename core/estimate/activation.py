"""The activation (workload) term: prefill streaming buffers plus the logits row.

Prefill runs in chunks of at most 512 tokens, so above 512 tokens the term is
constant; it is sized in FP16 and scales linearly with batch.
"""

from __future__ import annotations

import math

from core.estimate.headroom import FloatSetting, resolve_positive_float
from core.model.config import ActivationDims
from core.units import U64_MAX, f64_to_u64, sat_add, sat_mul

ACTIVATION_MULT_ENV = "MLXCEL_ACTIVATION_MULT"
ACTIVATION_BUFFER_MULT = 2.0
ACTIVATION_PREFILL_TOKENS = 512
ACTIVATION_DTYPE_BYTES = 2


def resolve_activation_mult(raw: str | None) -> FloatSetting:
    """The multiplier from a raw `MLXCEL_ACTIVATION_MULT` value (unset means 2.0)."""
    return resolve_positive_float(raw, ACTIVATION_MULT_ENV, ACTIVATION_BUFFER_MULT)


def compute_activation_bytes(
    dims: ActivationDims | None, ctx_len: int, batch: int, mult: float
) -> int:
    """Streaming part `(hidden + inter) * batch * min(ctx, 512) * 2 * mult` plus logits."""
    if dims is None:
        return 0
    prefill = min(max(ctx_len, 1), ACTIVATION_PREFILL_TOKENS)
    base = sat_mul(sat_add(dims.hidden, dims.intermediate), batch, prefill, ACTIVATION_DTYPE_BYTES)
    if math.isfinite(mult) and mult > 0.0:
        stream = f64_to_u64(min(float(base) * mult, float(U64_MAX)))
    else:
        stream = base
    logits = sat_mul(dims.vocab, batch, ACTIVATION_DTYPE_BYTES)
    return sat_add(stream, logits)
