"""`Answer.load`: vramscope's own mlx-lm load beside mlxcel's untouched estimate (#38)."""

from __future__ import annotations

import pytest

from core.answer.advice import MLXCEL_REFUSES
from core.answer.answer import Answer, answer, load_plan
from core.answer.device import Device
from core.answer.question import ModelFacts, Question, Split
from core.backend import Backend
from core.catalog.profiles import load_profile, profile_snapshot
from core.estimate.available import AvailableMemory
from core.estimate.estimate import Workload, estimate
from core.load.load import LoadEngine, TermKind
from core.load.mlx_lm import MlxLmPlan
from core.parallel.sharding import ParallelKind
from core.units import GIB

GEMMA3 = "google/gemma-3-4b-it"
CARD_24 = Device(Backend.ROCM, "test", AvailableMemory(24 * GIB, "--memory-limit 24GiB"))
RX7900XTX = Device(Backend.ROCM, "test", AvailableMemory(int(24 * GIB * 0.8), "rx7900xtx"))


def facts(repo_id: str, tensors: bool = True) -> ModelFacts:
    profile = load_profile(repo_id)
    listed = list(profile.tensors) if tensors and profile.tensors is not None else None
    return ModelFacts(profile_snapshot(profile), repo_id, tensors=listed)


def ask(model: ModelFacts, tokens: int, device: Device = CARD_24, kv_int8: bool = False) -> Answer:
    found = answer(model, Question(Workload(max_tokens=tokens, kv_int8=kv_int8), device))
    assert isinstance(found, Answer)
    return found


def test_gemma3_at_32k_runs_at_its_trained_context_on_a_24_gib_card() -> None:
    found = ask(facts(GEMMA3), 32768)
    load = found.load
    assert load is not None and load.engine is LoadEngine.MLX_LM and load.tokens == 32768
    # mlxcel's estimate is untouched: 348,160 bytes a token over 34 full layers.
    assert found.estimate == estimate(found.snapshot, found.question.workload,
                                      found.question.settings)  # fmt: skip
    assert found.estimate.kv_bytes == 348160 * 32768
    assert load.kv_bytes == (5 * 32768 + 29 * 1024) * 4 * 256 * 2 * 2  # 0.74 GiB, not 10.62
    assert load.weights_bytes == found.estimate.weights_bytes  # as stored, mlxcel's figure
    assert load.bytes_of(TermKind.INFLIGHT) == 1024 * 1024 * 1024  # ROCm: mlxcel's budget
    assert found.load_fits is True
    assert found.context.tokens == 34304  # mlxcel's reading of the same card
    ctx = found.load_context
    assert ctx is not None and ctx.tokens == 131072 and ctx.capped


def test_where_mlxcel_refuses_what_the_load_holds_the_advice_says_so() -> None:
    found = ask(facts(GEMMA3), 32768, RX7900XTX)
    assert found.fits is False and found.load_fits is True and found.mlxcel_refuses_load
    assert found.advice.lines[0].startswith(MLXCEL_REFUSES)
    assert found.best_context is found.load_context


def test_without_tensor_shapes_the_config_and_the_family_s_defaults_size_it() -> None:
    with_shapes, without = ask(facts(GEMMA3), 32768), ask(facts(GEMMA3, tensors=False), 32768)
    assert with_shapes.load is not None and without.load is not None
    assert without.load.kv_bytes == with_shapes.load.kv_bytes  # gemma3's 4 x 256 defaults
    assert any("no tensor shapes were read" in n for n in without.load.notes)


def test_the_load_is_monotone_and_its_largest_context_is_exact() -> None:
    found = ask(facts("meta-llama/Llama-3.1-8B-Instruct"), 8192)
    ctx = found.load_context
    assert ctx is not None and ctx.memory.value is not None and not ctx.memory.unbounded
    plan = load_plan(found.model, found.question)
    assert isinstance(plan, MlxLmPlan)
    limit = found.question.settings.available.bytes
    edge = ctx.memory.value
    assert plan.at(edge).total_bytes <= limit < plan.at(edge + 1).total_bytes


def test_a_split_has_no_load_and_says_why() -> None:
    question = Question(Workload(max_tokens=4096), CARD_24, split=Split(ParallelKind.TENSOR, 2))
    found = answer(facts("meta-llama/Llama-3.1-8B-Instruct"), question)
    assert isinstance(found, Answer)
    assert found.load is None and found.load_fits is None
    assert found.load_problem and "split" in found.load_problem


@pytest.mark.parametrize("kv_int8", [False, True])
def test_an_8_bit_cache_is_counted_from_mlx_lm_s_quantized_kv_start(kv_int8: bool) -> None:
    model = facts("meta-llama/Llama-3.1-8B-Instruct")
    short, long = ask(model, 4096, kv_int8=kv_int8), ask(model, 8192, kv_int8=kv_int8)
    assert short.load is not None and long.load is not None
    # Under 5,000 tokens mlx-lm keeps the 16-bit cache; past it, 8 bits and a scale and
    # bias per 64: 32 layers x 8 heads x (128 + 2 x 2 x 2) bytes x K and V per slot.
    per_slot_16 = 32 * 8 * 128 * 2 * 2
    assert short.load.kv_bytes == 4096 * per_slot_16
    per_slot_8 = 32 * 8 * (128 + 2 * 2 * 2) * 2
    assert long.load.kv_bytes == 8192 * (per_slot_8 if kv_int8 else per_slot_16)
