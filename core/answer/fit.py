"""What fits on one device: a row per (model, quantization), ranked.

A "stored" row is the estimate of the model as it is on disk: the same call
`vramscope inspect` makes, so its total and verdict are inspect's to the byte. A
what-if row (`mlx-8bit`, `mlx-4bit`) is that estimate with the weights term
replaced by `core.answer.quantize`'s count of what `mlx_lm.convert -q` would
write: vramscope's own figure, not mlxcel's, and labelled so.

Ranking (docs/fit.md): rows that fit come first; among them the larger model (by
mlxcel's analytical parameter count of the config) ranks higher, then the more
bits per weight (stored 16-bit before 8-bit before 4-bit), then the larger context
that still fits, then the name. Rows that do not fit follow, those that fit at
some smaller context first (by that context), then by size. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.answer.quantize import (
    MLX_LM_VERSION,
    SCHEMES,
    QuantizeUnsupported,
    QuantScheme,
    mlx_quantized_weights,
)
from core.answer.solve import FitLimit
from core.answer.solve_guess import largest_context
from core.estimate.estimate import EstimateSettings, Workload, estimate
from core.estimate.weights import estimate_params_from_config
from core.model.config import as_u64
from core.model.snapshot import ModelSnapshot

STORED = "stored"
QUANTIZATION_CHOICES = (STORED, *SCHEMES)
STORED_FORMULA = "mlxcel estimate (as vramscope inspect)"
WHAT_IF_FORMULA = f"vramscope what-if (mlx-lm {MLX_LM_VERSION} quantize rule)"
FLOAT_BITS = 16

Tensor = tuple[str, str, tuple[int, ...]]


@dataclass(frozen=True)
class FitModel:
    """One catalog model, read: what the rows need from it."""

    name: str
    where: str
    """Where it was read from (`built-in profile`, `HF cache @ main 1a2b3c4d: /path`)."""
    format_label: str
    snapshot: ModelSnapshot
    what_ifs: Mapping[str, int | str]
    """Per scheme name (`mlx-4bit`): the what-if's weight bytes, or why there are none."""


@dataclass(frozen=True)
class FitRow:
    """One (model, quantization) and its verdict; numbers are None where not computed."""

    model: str
    quantization: str
    format_label: str
    where: str
    formula: str
    params_billions: float | None
    bits: int
    weights_bytes: int | None
    total_bytes: int | None
    fits: bool | None
    slack_bytes: int | None
    overflow_bytes: int | None
    largest_context: FitLimit | None
    unavailable: str | None = None
    """Why there is no number (the what-if's rule does not apply), else None."""
    kv_bytes: int | None = None
    """mlxcel's KV term of the row's estimate (vramscope's calibrated total uses it)."""
    inflight_bytes: int | None = None
    """mlxcel's in-flight term of the row's estimate."""

    @property
    def largest_context_tokens(self) -> int | None:
        """The largest context that fits, or None when none does."""
        return self.largest_context.value if self.largest_context else None

    def json(self) -> dict[str, Any]:
        """The row of `fit --json`."""
        limit = self.largest_context
        return {
            "model": self.model,
            "quantization": self.quantization,
            "format": self.format_label,
            "weights_bytes": self.weights_bytes,
            "total_bytes": self.total_bytes,
            "fits": self.fits,
            "slack_bytes": self.slack_bytes,
            "overflow_bytes": self.overflow_bytes,
            "largest_context_tokens": self.largest_context_tokens,
            "largest_context_unbounded": bool(limit and limit.unbounded),
            "params_billions": self.params_billions,
            "bits": self.bits,
            "formula": self.formula,
            "where": self.where,
            "unavailable": self.unavailable,
        }


def _stored_bits(config: Mapping[str, Any] | None) -> int:
    """Bits per weight as stored: the quantization block's `bits`, else 16."""
    for key in ("quantization", "quantization_config"):
        block = config.get(key) if config is not None else None
        if isinstance(block, Mapping) and (bits := as_u64(block.get("bits"))) is not None:
            return bits
    return FLOAT_BITS


def _row(
    model: FitModel,
    quantization: str,
    snapshot: ModelSnapshot,
    workload: Workload,
    settings: EstimateSettings,
    bits: int,
    formula: str,
) -> FitRow:
    est = estimate(snapshot, workload, settings)
    config = snapshot.config
    params = estimate_params_from_config(config) if config is not None else None
    return FitRow(
        model=model.name,
        quantization=quantization,
        format_label=model.format_label,
        where=model.where,
        formula=formula,
        params_billions=params,
        bits=bits,
        weights_bytes=est.weights_bytes,
        total_bytes=est.total_bytes,
        fits=est.fits,
        slack_bytes=est.slack_bytes,
        overflow_bytes=est.overflow_bytes,
        largest_context=largest_context(snapshot, workload, settings),
        kv_bytes=est.kv_bytes,
        inflight_bytes=est.backend_inflight_bytes,
    )


def _unavailable(model: FitModel, scheme: QuantScheme, reason: str) -> FitRow:
    config = model.snapshot.config
    return FitRow(
        model=model.name,
        quantization=scheme.name,
        format_label=model.format_label,
        where=model.where,
        formula=WHAT_IF_FORMULA,
        params_billions=estimate_params_from_config(config) if config is not None else None,
        bits=scheme.bits,
        weights_bytes=None,
        total_bytes=None,
        fits=None,
        slack_bytes=None,
        overflow_bytes=None,
        largest_context=None,
        unavailable=reason,
    )


def what_if_weights(
    tensors: Sequence[Tensor] | None,
    config: Mapping[str, Any] | None,
    schemes: Iterable[QuantScheme],
    problem: str | None = None,
) -> dict[str, int | str]:
    """`FitModel.what_ifs` from a tensor list (None: `problem` says why) and a config."""
    out: dict[str, int | str] = {}
    for scheme in schemes:
        if config is None:
            out[scheme.name] = "no readable config.json"
        elif tensors is None:
            out[scheme.name] = problem or "no tensor list"
        else:
            try:
                out[scheme.name] = mlx_quantized_weights(tensors, config, scheme).bytes
            except QuantizeUnsupported as exc:
                out[scheme.name] = str(exc)
    return out


def model_rows(
    model: FitModel,
    quantizations: Sequence[str],
    workload: Workload,
    settings: EstimateSettings,
) -> list[FitRow]:
    """The rows of one model, in the order of `quantizations`."""
    rows: list[FitRow] = []
    snap = model.snapshot
    root = snap.config.root if snap.config is not None else None
    for quantization in quantizations:
        if quantization == STORED:
            rows.append(
                _row(model, STORED, snap, workload, settings, _stored_bits(root), STORED_FORMULA)
            )
            continue
        scheme = SCHEMES[quantization]
        weights = model.what_ifs.get(quantization, "not computed")
        if isinstance(weights, str):
            rows.append(_unavailable(model, scheme, weights))
            continue
        what_if = replace(snap, weights=replace(snap.weights, bytes=weights))
        rows.append(
            _row(model, quantization, what_if, workload, settings, scheme.bits, WHAT_IF_FORMULA)
        )
    return rows


def rank_key(row: FitRow) -> tuple[Any, ...]:
    """The sort key of the documented ranking (smaller sorts first)."""
    params = row.params_billions or 0.0
    context = row.largest_context_tokens
    if row.fits:
        return (0, -params, -row.bits, -(context or 0), row.model.casefold(), row.quantization)
    if row.fits is False:
        has_context = context is not None
        return (
            1,
            not has_context,
            -(context or 0),
            -params,
            row.model.casefold(),
            row.quantization,
        )
    return (2, row.model.casefold(), row.quantization)


def rank_rows(rows: Iterable[FitRow]) -> list[FitRow]:
    """Rows in ranking order; rows without a number last."""
    return sorted(rows, key=rank_key)
