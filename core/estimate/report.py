"""mlxcel's two renderings of an estimate: the text banner and the `--json` report."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from core.display_text import clean_text, json_safe
from core.estimate.downstream import paged_v2_workspace_reserve_bytes
from core.estimate.estimate import MemoryEstimate, kv_bytes_per_token
from core.estimate.snapshot import ModelSnapshot
from core.model.config import PER_SLOT_OVERHEAD_FAMILIES
from core.units import format_bytes

_LABEL_WIDTH = 19  # values start at column 20


def _line(label: str, value: str) -> str:
    return f"  {label}".ljust(_LABEL_WIDTH) + value + "\n"


def format_estimate(display: str, est: MemoryEstimate, source: str | None = None) -> str:
    """The `=== Memory Estimate ===` banner, line for line (every line ends in `\\n`).

    `source` (a model read from the Hub) adds one `Source:` line under `Model:`;
    without it the banner is mlxcel's.
    """
    wl = est.workload
    out = [
        "=== Memory Estimate ===\n",
        _line("Model:", clean_text(display)),
        *([_line("Source:", clean_text(source))] if source else []),
        _line("Context length:", f"{wl.max_tokens} tokens (batch = {wl.batch})"),
        _line("Quant hint:", wl.quant.text_label),
        _line("KV dtype:", wl.kv_cache_mode.value),
        "\n",
        _line("Weights:", f"{format_bytes(est.weights_bytes)}  ({est.weights_source.text_label})"),
        _line("KV cache:", f"{format_bytes(est.kv.bytes)}  ({est.kv.detail})"),
    ]
    if est.kv.available and est.kv.per_token_bytes > 0:
        out.append(
            " " * _LABEL_WIDTH + f"({format_bytes(est.kv.per_token_bytes)} per token at "
            "steady state, same dtype)\n"
        )
    out.append(
        _line(
            "Activation:",
            f"{format_bytes(est.activation_bytes)}  (batch {wl.batch} × "
            "≤512 prefill tokens × (hidden+intermediate) + logits)",
        )
    )
    overhead = format_bytes(est.shown_overhead_bytes)
    factor = f"(factor {est.headroom_factor:.2f}x on weights+kv)"
    out.append(_line("Allocator ovhd:", f"{overhead}  {factor}"))
    if est.backend_inflight_bytes > 0:
        out.append(
            f"  Backend in-flight: {format_bytes(est.backend_inflight_bytes)}  "
            "(MLX_ROCM_MAX_INFLIGHT_MB)\n"
        )
    out += [
        "  -----\n",
        _line("Total estimate:", format_bytes(est.total_bytes)),
        _line("Available:", format_bytes(est.available_bytes)),
        "\n",
    ]
    if est.fits:
        out.append(f"  FITS: {format_bytes(est.slack_bytes)} of headroom\n")
    else:
        out.append(f"  DOES NOT FIT: {format_bytes(est.overflow_bytes)} over budget\n")
    return "".join(out)


DOES_NOT_FIT_NOTE = (
    "Note: this configuration is expected to fail the `--estimate-memory` preflight on "
    "`mlxcel generate` / `mlxcel serve` unless `--force` is set."
)


def inspect_report(model: ModelSnapshot, est: MemoryEstimate, version: str) -> dict[str, Any]:
    """The JSON report as an ordered dict, keys in mlxcel's `InspectReport` order, with
    vramscope's own beside them (`source` for a Hub read, `allocator_overhead_bytes`)."""
    wl = est.workload
    family = model.family
    per_slot = (
        paged_v2_workspace_reserve_bytes(model.config, wl.batch)
        if family in PER_SLOT_OVERHEAD_FAMILIES and model.config is not None
        else None
    )
    source = {"source": model.source} if model.source else {}  # only for a Hub read
    return {
        "vramscope_version": version,
        "model": model.display,
        **source,
        "model_type": model.model_type,
        "family": family,
        "inputs": {
            "max_tokens": wl.max_tokens,
            "batch": wl.batch,
            "kv_cache_mode": wl.kv_cache_mode.value,
            "quant": wl.quant.json_label,
        },
        "weights_bytes": est.weights_bytes,
        "weights_source": est.weights_source.json_label,
        "kv_bytes_per_token": {
            "fp16": kv_bytes_per_token(model, False),
            "int8": kv_bytes_per_token(model, True),
            "turbo4": None,
        },
        "kv_bytes_total": est.kv.bytes,
        "kv_detail": est.kv.detail,
        "per_slot_overhead_bytes": per_slot,
        "activation_bytes": est.activation_bytes,
        "backend_inflight_bytes": est.backend_inflight_bytes,
        "headroom_bytes": est.runtime_headroom_bytes,
        # vramscope's own, beside mlxcel's headroom_bytes (= O + A + I): O alone, the
        # banner's `Allocator ovhd:` figure (docs/estimate.md).
        "allocator_overhead_bytes": est.shown_overhead_bytes,
        "headroom_factor": est.headroom_factor,
        "budget_bytes": est.available_bytes,
        "total_bytes": est.total_bytes,
        "fits": est.fits,
    }


def format_f64_like_serde(x: float) -> str:
    """Format a finite float as serde_json does (ryu): `1.2`, `100.0`, `1e-7`, `1.5e16`."""
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    # repr gives the shortest round-trip digits, as ryu does; only the layout differs.
    parts = Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(map(str, parts.digits))
    k = int(parts.exponent)
    length = len(digits)
    kk = length + k  # 10^(kk-1) <= |x| < 10^kk
    if k >= 0 and kk <= 16:
        return f"{sign}{digits}{'0' * k}.0"
    if 0 < kk <= 16:
        return f"{sign}{digits[:kk]}.{digits[kk:]}"
    if -5 < kk <= 0:
        return f"{sign}0.{'0' * -kk}{digits}"
    if length == 1:
        return f"{sign}{digits}e{kk - 1}"
    return f"{sign}{digits[0]}.{digits[1:]}e{kk - 1}"


def _encode(value: Any, indent: int) -> str:
    pad = "  " * (indent + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {_encode(v, indent + 1)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, float):
        return format_f64_like_serde(value) if math.isfinite(value) else "null"
    return json.dumps(value, ensure_ascii=False)


def to_json_pretty(report: dict[str, Any]) -> str:
    """`serde_json::to_string_pretty`: 2-space indent, UTF-8, ryu floats.

    Strings holding bytes that are not UTF-8 (a folder name) are written with
    those bytes as `\\xNN`, so the output is always valid UTF-8 JSON.
    """
    return _encode(json_safe(report), 0)
