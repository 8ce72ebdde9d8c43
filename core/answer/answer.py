"""The one function that answers a `Question`, and the `Answer` every surface renders.

An answer holds mlxcel's estimate untouched (over the stored weights, or over a
what-if's, labelled so) and vramscope's own figures beside it: every rank's verdict
(one rank on one device), the largest context (capped at the trained context, with
the reason), the largest in-flight budget, the model's parameter counts, the
calibrated estimate where a calibration applies to this device (and otherwise why
not), and advice that never suggests the quantization the model already has.

`inspect`, `fit`, the explorer, the Fits view and the split plans all call `answer`,
so a figure two of them show is the same figure. Pure: no I/O.

Beside mlxcel's estimate, an answer about one device carries vramscope's own load
(`Answer.load`: `core.load.load.EngineLoad`, the memory mlx-lm really holds at the
question's tokens, term by term, each figure with its origin), the largest context by
that load (`Answer.load_context`) and its verdict (`Answer.load_fits`); where no load
can be made, `load` is None and `load_problem` says why. mlxcel's `estimate`, `fits`
and `context` are untouched by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from core.answer.advice import Advice, advise
from core.answer.calibrated import CalibratedAnswer, calibrate_answer
from core.answer.context import ContextAnswer, TrainedContext, trained_context
from core.answer.params import ParamCount, param_count
from core.answer.quantization import Quantization
from core.answer.question import ModelFacts, Question, Split
from core.answer.solve import CONTEXT_SEARCH_LIMIT, FitLimit, largest_context, largest_fitting
from core.answer.solve import largest_fitting_inflight as _largest_inflight
from core.answer.verdict import Scope, Verdict
from core.errors import ShardingError
from core.estimate.estimate import MemoryEstimate, estimate
from core.estimate.snapshot import ModelSnapshot
from core.load.load import EngineLoad, LoadTerm, Origin, TermKind
from core.load.mlx_lm import MlxLmPlan, NoLoad, plan_mlx_lm
from core.parallel.plan import (
    ParallelEstimate,
    ParallelPlan,
    ParallelSplit,
    RankEstimate,
    RankShare,
    estimate_split,
    split_model,
)
from core.parallel.sharding import mlx_lm_family

if TYPE_CHECKING:
    from core.calibration.record import Calibration

WHAT_IF_RULE = "mlx-lm 0.32.2 quantize rule"


@dataclass(frozen=True)
class WhatIf:
    """The answer is for a what-if quantization: mlxcel's formula over vramscope's weights."""

    quantization: Quantization
    stored_weights_bytes: int
    """The weights as stored (mlxcel's figure), for the label."""


@dataclass(frozen=True)
class Unanswered:
    """A question with no number: the what-if's rule does not apply, say."""

    question: Question
    model: ModelFacts
    reason: str


@dataclass(frozen=True)
class Answer:
    """Will it fit, and by how much: mlxcel's estimate and vramscope's figures beside it."""

    question: Question
    model: ModelFacts
    snapshot: ModelSnapshot
    """The model the estimate is of (as stored, or with the what-if's weights)."""
    estimate: MemoryEstimate
    """mlxcel's estimate of the whole model on one device, untouched."""
    what_if: WhatIf | None
    ranks: tuple[RankEstimate, ...]
    """Every rank's estimate and verdict (one rank on one device); empty when the split
    cannot be made (`split_problem` says why)."""
    plan: ParallelEstimate | None
    """The split's estimate (one rank on one device; None when it cannot be made)."""
    split_problem: str | None
    context: ContextAnswer
    """The largest context that fits (every rank, for a split), capped at the trained one."""
    calibrations: Sequence[Calibration] | None = None
    """The calibrations to choose from; None: no calibrated estimate was asked for."""
    calibration_engine: str | None = None
    """Only a calibration of this engine (or of any engine), when given."""
    load: EngineLoad | None = None
    """vramscope's own load at the question's tokens (mlx-lm, the whole model on one
    device); None where none can be made (`load_problem` says why)."""
    load_problem: str | None = None
    load_plan: MlxLmPlan | None = field(default=None, repr=False, compare=False)
    """The plan the load was made from (the largest context by the load searches it)."""

    @cached_property
    def load_context(self) -> ContextAnswer | None:
        """The largest context by the load: an exact search over the load plan's `at`,
        capped at the trained context; None without a load. Made when first read: the
        search costs 20-30 ms, and a key in the explorer needs only the load itself."""
        plan = self.load_plan
        if plan is None:
            return None
        q = self.question
        available = q.settings.available
        # The largest context does not depend on the question's own context: kept on the
        # facts per plan and budget, so a token key never searches again.
        what_if = self.what_if.quantization if self.what_if is not None else None
        key = ("context", q.workload.kv_int8, q.workload.batch,
               q.settings.backend_inflight_bytes, what_if, available.bytes)  # fmt: skip
        found = self.model._loads.get(key)
        if found is None:

            def fits(tokens: int) -> bool:
                return plan.at(tokens).total_bytes <= available.bytes

            found = largest_fitting(fits, 0, CONTEXT_SEARCH_LIMIT)
            self.model._loads[key] = found
        assert isinstance(found, FitLimit)
        return ContextAnswer(found, self.context.trained, available.unread)

    @property
    def load_fits(self) -> bool | None:
        """The load's verdict (total <= available); None without a load, or when the
        available memory was never read."""
        if self.load is None or self.question.settings.available.unread is not None:
            return None
        return self.load.total_bytes <= self.question.settings.available.bytes

    @property
    def load_verdict(self) -> Verdict:
        """The load's verdict as a value (`load_fits`, with its slack or overflow)."""
        fits = self.load_fits
        if fits is None or self.load is None:
            return Verdict(Scope.LOAD, None)
        available = self.question.settings.available.bytes
        return Verdict.of_total(self.load.total_bytes, available, Scope.LOAD)

    @property
    def mlxcel_refuses_load(self) -> bool:
        """mlxcel's preflight refuses what vramscope's load holds."""
        return self.load_fits is True and self.fits is False

    @property
    def best_context(self) -> ContextAnswer:
        """The largest context to advise: by the load where there is one, else mlxcel's."""
        return self.load_context if self.load_context is not None else self.context

    @cached_property
    def verdict(self) -> Verdict:
        """The one verdict: mlxcel's on one device, every rank's for a split (no verdict
        when the split cannot be made); worded by `core.answer.verdict.verdict_words`."""
        if self.single_device and len(self.ranks) == 1:
            return Verdict.of_estimate(self.estimate)
        return Verdict.of_plan(self.ranks)

    @property
    def fits(self) -> bool | None:
        """Every rank fits (one device: mlxcel's verdict); None when the split cannot be made."""
        return self.verdict.fits

    @property
    def trained(self) -> TrainedContext | None:
        """What the model was trained for."""
        return self.context.trained

    @property
    def past_trained(self) -> bool:
        """The context asked for is more than the model was trained for."""
        return self.context.past_trained(self.question.workload.max_tokens)

    @property
    def single_device(self) -> bool:
        """True for a question about one device."""
        return self.question.split.ranks == 1

    @property
    def fullest_rank(self) -> RankEstimate | None:
        """The rank nearest its own limit (devices may differ), the largest peak on a tie."""
        if not self.ranks:
            return None
        return max(
            self.ranks, key=lambda r: (r.peak_bytes - r.estimate.available_bytes, r.peak_bytes)
        )

    @cached_property
    def inflight_limit(self) -> FitLimit | None:
        """The largest in-flight budget (MiB) one device fits; None off ROCm, or for a split."""
        if not self.single_device:
            return None
        q = self.question
        return _largest_inflight(self.snapshot, q.workload, q.settings)

    @cached_property
    def params(self) -> ParamCount | None:
        """The model's parameter counts (total, active per token for a MoE)."""
        return param_count(self.snapshot.config)

    @cached_property
    def calibrated(self) -> CalibratedAnswer | None:
        """vramscope's calibrated estimate, or why none applies; None when none was asked
        for (no calibrations given)."""
        if self.calibrations is None:
            return None
        return calibrate_answer(self, self.calibrations, self.calibration_engine)

    @cached_property
    def advice(self) -> Advice:
        """vramscope's advice (never the quantization the model already has)."""
        return advise(self)

    @property
    def warnings(self) -> tuple[str, ...]:
        """The model's warning lines, the estimate's own, and that the available memory
        was never read (the explorer shows them; `inspect` prints the last from its inputs)."""
        unread = self.question.settings.available.unread_line
        return (*self.snapshot.warnings, *self.estimate.warnings, *([unread] if unread else []))


def what_if_snapshot(snapshot: ModelSnapshot, weights_bytes: int) -> ModelSnapshot:
    """The model with the weights term replaced by a what-if's."""
    return replace(snapshot, weights=replace(snapshot.weights, bytes=weights_bytes))


def _one_rank(model: ModelSnapshot, est: MemoryEstimate) -> RankEstimate:
    """One device as a plan of one rank: the whole model, mlxcel's estimate, loaded whole."""
    share = RankShare(
        rank=0,
        sharded_weight_bytes=0,
        replicated_weight_bytes=est.weights_bytes,
        layers=None,
        kv_heads=None,
        kv_arch=model.kv_arch,
        load_peak_bytes=est.weights_bytes,
        activation_dims=model.activation_dims,
    )
    return RankEstimate.of(share, est)


def model_split(model: ModelFacts, split: Split) -> ParallelSplit | str:
    """The model split by mlx-lm's rules (cached on the facts), or why it cannot be."""
    key = (split.kind, split.ranks)
    found = model._splits.get(key)
    if found is None:
        plan = ParallelPlan(split.kind, split.ranks)
        if model.tensors is None:
            found = (
                f"{plan.kind.label}: no tensor shapes for this model (safetensors headers needed)"
            )
        else:
            try:
                found = split_model(model.snapshot, model.tensors, plan)
            except ShardingError as exc:
                found = str(exc)
        model._splits[key] = found
    assert isinstance(found, ParallelSplit | str)
    return found


def answer(
    model: ModelFacts,
    question: Question,
    calibrations: Sequence[Calibration] | None = None,
    calibration_engine: str | None = None,
) -> Answer | Unanswered:
    """The answer to `question` about `model` (`calibrations`: those to choose from for
    the calibrated estimate, of `calibration_engine` when given; None: not asked for)."""
    snapshot, what_if = model.snapshot, None
    q = question.quantize_as
    if q.is_what_if:
        weights = model.what_ifs.get(q, "not computed")
        if isinstance(weights, str):
            return Unanswered(question, model, weights)
        snapshot = what_if_snapshot(model.snapshot, weights)
        what_if = WhatIf(q, model.snapshot.weights.bytes)
    workload, settings = question.workload, question.settings
    est = estimate(snapshot, workload, settings)
    trained = trained_context(snapshot.config)
    split = question.split
    if split.ranks == 1:
        memory = largest_context(snapshot, workload, settings)
        one = (_one_rank(snapshot, est),)
        family = mlx_lm_family(snapshot.model_type)
        plan = ParallelEstimate(ParallelPlan(split.kind, 1), family, one, est)
        unread = settings.available.unread
        load, problem, load_plan = _load_of(model, question, what_if)
        return Answer(
            question, model, snapshot, est, what_if, one, plan, None,
            ContextAnswer(memory, trained, unread), calibrations, calibration_engine,
            load, problem, load_plan,
        )  # fmt: skip
    if what_if is not None:
        problem = f"{split.kind.label}: a split of a what-if quantization is not modelled"
        return _unsplit(question, model, snapshot, est, what_if, problem, trained, calibrations)
    made = model_split(model, split)
    if isinstance(made, str):
        return _unsplit(question, model, snapshot, est, what_if, made, trained, calibrations)
    limits = split.rank_available
    pe = estimate_split(snapshot, made, workload, settings, limits)

    def fits(tokens: int) -> bool:
        wl = replace(workload, max_tokens=tokens)
        return estimate_split(snapshot, made, wl, settings, limits).fits

    memory = largest_fitting(fits, 0, CONTEXT_SEARCH_LIMIT)
    return Answer(
        question, model, snapshot, est, what_if, pe.ranks, pe, None,
        ContextAnswer(memory, trained), calibrations, calibration_engine,
        None, SPLIT_LOAD,
    )  # fmt: skip


def _unsplit(
    question: Question,
    model: ModelFacts,
    snapshot: ModelSnapshot,
    est: MemoryEstimate,
    what_if: WhatIf | None,
    problem: str,
    trained: TrainedContext | None,
    calibrations: Sequence[Calibration] | None,
) -> Answer:
    return Answer(
        question, model, snapshot, est, what_if, (), None, problem,
        ContextAnswer(FitLimit(None), trained), calibrations, None, None, SPLIT_LOAD,
    )  # fmt: skip


SPLIT_LOAD = "the load of a split is not modelled yet: mlxcel's per-rank estimate stands"


def load_plan(model: ModelFacts, question: Question) -> MlxLmPlan | NoLoad:
    """mlx-lm's load plan of the stored model for this question's cache and device
    (read once per model and settings, cached on the facts)."""
    workload, settings = question.workload, question.settings
    inflight = settings.backend_inflight_bytes
    key = ("mlx-lm", workload.kv_int8, workload.batch, inflight)
    found = model._loads.get(key)
    if found is None:
        detail = (
            f"MLX's ROCm in-flight reserve, {question.inflight_mib:,} MiB "
            "(MLX_ROCM_MAX_INFLIGHT_MB), mlxcel's budget"
        )
        found = plan_mlx_lm(
            model.snapshot, model.tensors, kv_int8=workload.kv_int8, batch=workload.batch,
            inflight_bytes=inflight, inflight_detail=detail,
        )  # fmt: skip
        model._loads[key] = found
    assert isinstance(found, MlxLmPlan | NoLoad)
    return found


def _load_of(
    model: ModelFacts, question: Question, what_if: WhatIf | None
) -> tuple[EngineLoad | None, str | None, MlxLmPlan | None]:
    """The load at the question's tokens, why there is none, and the plan it came from."""
    plan = load_plan(model, question)
    if isinstance(plan, NoLoad):
        return None, plan.reason, None
    if what_if is not None:
        # A what-if quantization changes the weights; mlx-lm's quantized layers compute
        # in the scales' dtype, the model's own, so the caches stay as they are.
        weights = model.what_ifs[what_if.quantization]
        assert isinstance(weights, int)
        detail = f"what-if {what_if.quantization.word}: {WHAT_IF_RULE}"
        plan = replace(
            plan, weights=LoadTerm(TermKind.WEIGHTS, weights, Origin.ENGINE_RULE, detail)
        )
    return plan.at(question.workload.max_tokens), None, plan
