"""What fits on one device: a row per (model, quantization), each an `Answer`, ranked.

A "stored" row is the answer about the model as it is on disk: the same question
`vramscope inspect` asks, so its total, verdict and largest context are inspect's to
the byte. A what-if row (`mlx-8bit`, `mlx-4bit`) is that question asked with the
weights term replaced by `core.answer.quantize`'s count of what `mlx_lm.convert -q`
would write: vramscope's own figure, not mlxcel's, and labelled so.

Ranking (docs/fit.md) is by vramscope's load (`Answer.load`, the memory mlx-lm holds)
where the row has one, else by mlxcel's estimate; mlxcel's verdict stays a column of
its own. Rows that fit at the context asked come first, then rows that
fit the memory only past the model's trained context; among them the larger model
(by its parameter count, `core.answer.params`: total, not mlxcel's MoE-blind
analytical count) ranks higher, then the more bits per weight (stored 16-bit before
8-bit before 4-bit), then the larger context that still fits, then the name. Rows
that do not fit follow, those that fit at some smaller context first (by that
context), then by size. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.answer.advice import stored_bits
from core.answer.answer import Answer, answer
from core.answer.context import ContextAnswer
from core.answer.quantization import Quantization
from core.answer.quantize import (
    MLX_LM_VERSION,
    QuantizeUnsupported,
    mlx_quantized_weights,
)
from core.answer.question import ModelFacts, Question
from core.answer.verdict import Scope, Verdict
from core.load.load import EngineLoad
from core.model.quant_scheme import QuantScheme

QUANTIZATION_CHOICES: tuple[Quantization, ...] = tuple(Quantization)
STORED_FORMULA = "mlxcel estimate (as vramscope inspect)"
WHAT_IF_FORMULA = f"vramscope what-if (mlx-lm {MLX_LM_VERSION} quantize rule)"

Tensor = tuple[str, str, tuple[int, ...]]


@dataclass(frozen=True)
class FitModel:
    """One catalog model, read: what the rows need from it."""

    facts: ModelFacts
    where: str
    """Where it was read from (`built-in profile`, `HF cache @ main 1a2b3c4d: /path`)."""
    format_label: str
    warnings: tuple[str, ...] = ()
    """File faults the estimate fell back past (`vramscope models` marks them (!))."""

    @property
    def name(self) -> str:
        """The model's name as listed."""
        return self.facts.label


@dataclass(frozen=True)
class FitRow:
    """One (model, quantization): its answer, or why there is none."""

    model: str
    quantization: Quantization
    format_label: str
    where: str
    found: Answer | None
    """The answer (None: `unavailable` says why)."""
    unavailable: str | None = None
    bits: int = 16
    """Bits per weight as stored, or the what-if's."""
    warnings: tuple[str, ...] = ()
    """The model's file faults the estimate fell back past (marked (!))."""

    @property
    def formula(self) -> str:
        """Whose figure the total is: mlxcel's estimate, or vramscope's what-if in it."""
        return WHAT_IF_FORMULA if self.quantization.is_what_if else STORED_FORMULA

    @property
    def weights_bytes(self) -> int | None:
        """The weights term (a what-if's count for a what-if row)."""
        return self.found.estimate.weights_bytes if self.found else None

    @property
    def total_bytes(self) -> int | None:
        """mlxcel's total."""
        return self.found.estimate.total_bytes if self.found else None

    @property
    def verdict(self) -> Verdict:
        """The answer's verdict (no verdict without a number)."""
        return self.found.verdict if self.found else Verdict(Scope.DEVICE, None)

    @property
    def fits(self) -> bool | None:
        """mlxcel's verdict (None without a number)."""
        return self.verdict.fits

    @property
    def slack_bytes(self) -> int | None:
        """Memory left when it fits."""
        return self.found.estimate.slack_bytes if self.found else None

    @property
    def overflow_bytes(self) -> int | None:
        """Bytes over when it does not."""
        return self.found.estimate.overflow_bytes if self.found else None

    @property
    def context(self) -> ContextAnswer | None:
        """The largest context that fits, capped at the trained one."""
        return self.found.context if self.found else None

    @property
    def largest_context_tokens(self) -> int | None:
        """The largest context to use (capped), or None when none fits."""
        return self.found.context.tokens if self.found else None

    @property
    def past_trained(self) -> bool:
        """The context asked for is past the model's trained context."""
        return bool(self.found and self.found.past_trained)

    @property
    def load(self) -> EngineLoad | None:
        """vramscope's load at the context asked (None: none for this row, `load_problem`)."""
        return self.found.load if self.found else None

    @property
    def load_fits(self) -> bool | None:
        """The load's verdict (None without a load)."""
        return self.found.load_fits if self.found else None

    @property
    def ranked_fits(self) -> bool | None:
        """The verdict the row is ranked and shown by: the load's, else mlxcel's."""
        by_load = self.load_fits
        return by_load if by_load is not None else self.fits

    @property
    def margin_bytes(self) -> int | None:
        """What is left (negative: over) by the ranked verdict's total."""
        if self.found is None:
            return None
        load = self.found.load
        if self.load_fits is not None and load is not None:
            return self.found.question.settings.available.bytes - load.total_bytes
        est = self.found.estimate
        return est.slack_bytes if est.fits else -est.overflow_bytes

    @property
    def best_context(self) -> ContextAnswer | None:
        """The largest context by the load where there is one, else mlxcel's."""
        return self.found.best_context if self.found else None

    @property
    def params_billions(self) -> float | None:
        """The model's parameters in billions (total; `core.answer.params`)."""
        params = self.found.params if self.found else None
        return params.billions if params else None

    def json(self) -> dict[str, Any]:
        """The row of `fit --json`."""
        found = self.found
        params = found.params if found else None
        context = found.context if found else None
        trained = found.trained if found else None
        return {
            "model": self.model,
            "quantization": self.quantization.word,
            "format": self.format_label,
            "weights_bytes": self.weights_bytes,
            "total_bytes": self.total_bytes,
            "fits": self.fits,
            "slack_bytes": self.slack_bytes,
            "overflow_bytes": self.overflow_bytes,
            "largest_context_tokens": self.largest_context_tokens,
            "largest_context_unbounded": bool(context and context.unbounded),
            "params_billions": round(params.billions, 3) if params else None,
            "bits": self.bits,
            "formula": self.formula,
            "where": self.where,
            "unavailable": self.unavailable,
            # vramscope's, after every key fit always wrote.
            "largest_context": context.json() if context else None,
            "past_trained_context": self.past_trained,
            "trained_context_tokens": trained.tokens if trained else None,
            "params": params.json() if params else None,
            "warnings": list(self.warnings),
            # vramscope's load, after every key above (#38).
            "load": self._load_json(),
            "load_problem": found.load_problem if found else None,
            "ranked_by": (
                None if found is None else "load" if self.load_fits is not None else "mlxcel"
            ),
        }

    def _load_json(self) -> dict[str, Any] | None:
        found, load = self.found, self.load
        if found is None or load is None:
            return None
        context = found.load_context
        return {
            "engine": load.engine.label,
            "weights_bytes": load.weights_bytes,
            "kv_bytes": load.kv_bytes,
            "transient_bytes": load.transient_bytes,
            "total_bytes": load.total_bytes,
            "fits": found.load_fits,
            "margin_bytes": self.margin_bytes,
            "largest_context": context.json() if context else None,
            "sources": [
                {"name": s.name, "value": s.value, "origin": s.origin.value, "detail": s.detail}
                for s in load.sources
            ],
        }


def what_if_weights(
    tensors: Sequence[Tensor] | None,
    config: Mapping[str, Any] | None,
    schemes: Mapping[str, QuantScheme],
    problem: str | None = None,
) -> dict[str, int | str]:
    """A model's what-ifs by scheme word, from a tensor list (None: `problem` says why)
    and a config (the catalog caches them by word)."""
    out: dict[str, int | str] = {}
    for word, scheme in schemes.items():
        if config is None:
            out[word] = "no readable config.json"
        elif tensors is None:
            out[word] = problem or "no tensor list"
        else:
            try:
                out[word] = mlx_quantized_weights(tensors, config, scheme).bytes
            except QuantizeUnsupported as exc:
                out[word] = str(exc)
    return out


def model_rows(
    model: FitModel,
    quantizations: Sequence[Quantization],
    question: Question,
    calibrations: Sequence[Any] | None = None,
    calibration_engine: str | None = None,
) -> list[FitRow]:
    """The rows of one model, in the order of `quantizations`, each the answer to
    `question` asked as that quantization."""
    from dataclasses import replace

    config = model.facts.snapshot.config
    stored = stored_bits(config.root if config is not None else None)
    rows: list[FitRow] = []
    for quantization in quantizations:
        asked = replace(question, quantize_as=quantization)
        found = answer(model.facts, asked, calibrations, calibration_engine)
        bits = quantization.bits or stored
        if isinstance(found, Answer):
            rows.append(
                FitRow(
                    model.name, quantization, model.format_label, model.where, found, None,
                    bits, model.warnings,
                )
            )  # fmt: skip
        else:
            rows.append(
                FitRow(
                    model.name, quantization, model.format_label, model.where, None,
                    found.reason, bits, model.warnings,
                )
            )  # fmt: skip
    return rows


def rank_key(row: FitRow) -> tuple[Any, ...]:
    """The sort key of the documented ranking (smaller sorts first)."""
    params = row.params_billions or 0.0
    best = row.best_context
    context = best.tokens if best is not None else None
    name = (row.model.casefold(), row.quantization.word)
    fits = row.ranked_fits
    if fits:
        return (0, row.past_trained, -params, -row.bits, -(context or 0), *name)
    if fits is False:
        has_context = context is not None
        return (1, not has_context, -(context or 0), -params, *name)
    return (2, *name)


def rank_rows(rows: Iterable[FitRow]) -> list[FitRow]:
    """Rows in ranking order; rows without a number last."""
    return sorted(rows, key=rank_key)
