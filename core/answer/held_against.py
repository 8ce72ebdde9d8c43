"""The estimate a measured peak is held against, as an `Answer`.

A run's question: its context P + G at batch 1 with its KV cache, on a device of the
backend whose formula holds it (`core.measurement.comparison.held_against`), with the
settings' available memory, in-flight budget, overhead factor and activation
multiplier. `measure` attaches its `.estimate` to a result, and the explorer recomputes
it for a past run: both through here, so the figure is computed once, in `answer`.
"""

from __future__ import annotations

from core.answer.answer import Answer, answer
from core.answer.device import Device
from core.answer.question import ModelFacts, Question
from core.backend import Backend
from core.estimate.estimate import EstimateSettings, Workload
from core.estimate.snapshot import ModelSnapshot

HELD_AGAINST = "the formula a measured peak is held against"
"""Why the question's backend is the one it is."""


def held_against_answer(
    snapshot: ModelSnapshot,
    settings: EstimateSettings,
    backend: Backend,
    *,
    context_tokens: int,
    kv_int8: bool,
) -> Answer:
    """The answer a peak is compared with (callers read `.estimate`): the run's context,
    batch 1, its KV cache, under `settings` (the run's budget) with `backend`'s formula."""
    question = Question(
        workload=Workload(max_tokens=context_tokens, kv_int8=kv_int8),
        device=Device(backend=backend, backend_reason=HELD_AGAINST, available=settings.available),
        inflight_mib=settings.inflight_mib,
        headroom_factor=settings.headroom_factor,
        activation_mult=settings.activation_mult,
    )
    result = answer(ModelFacts(snapshot), question)
    # Only a what-if quantization goes unanswered, and a run's question asks none.
    assert isinstance(result, Answer), result
    return result
