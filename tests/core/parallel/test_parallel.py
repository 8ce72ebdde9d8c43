"""Per-rank estimates under mlx-lm's tensor- and pipeline-parallel sharding."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core.answer.report import ANSWER_KEYS
from core.backend import Backend
from core.catalog.profiles import load_profile, profile_snapshot
from core.catalog.split_source import resolve_parallel_model
from core.errors import ShardingError
from core.estimate.available import AvailableMemory
from core.estimate.estimate import EstimateSettings, Workload, estimate
from core.model.safetensors_header import tensor_bytes
from core.parallel.plan import ParallelPlan, estimate_parallel, parse_rank_limits
from core.parallel.sharding import ParallelKind, pipeline_ranges, tensor_rule
from core.units import GIB
from tests.core.helpers import LLAMA_4BIT, QWEN3_MOE_4BIT, QWEN25_4BIT
from tui.cli import main

TP2 = ParallelPlan(ParallelKind.TENSOR, 2)
PP2 = ParallelPlan(ParallelKind.PIPELINE, 2)
DOCS = Path(__file__).resolve().parents[3] / "docs" / "estimate.md"


def settings(backend: Backend = Backend.ROCM, available: int = 24 * GIB) -> EstimateSettings:
    return EstimateSettings(backend, AvailableMemory(available, "test"))


def plan_for(repo: str, plan: ParallelPlan, backend: Backend = Backend.ROCM, tokens: int = 4096):
    profile = load_profile(repo)
    model = profile_snapshot(profile)
    assert profile.tensors is not None
    return estimate_parallel(
        model, profile.tensors, plan, Workload(max_tokens=tokens), settings(backend)
    )


def test_tp2_halves_the_kv_of_eight_kv_heads() -> None:
    pe = plan_for(LLAMA_4BIT, TP2)
    assert pe.single.kv_bytes == 536_870_912  # 32 layers x 2 x 8 x 128 x 2 B x 4096
    for rank in pe.ranks:
        assert rank.kv_heads == 4
        assert rank.estimate.kv_bytes * 2 == pe.single.kv_bytes


def test_tp2_sharded_tensors_add_up_and_the_rest_is_on_every_rank() -> None:
    profile = load_profile(LLAMA_4BIT)
    assert profile.tensors is not None
    pe = plan_for(LLAMA_4BIT, TP2)
    whole = {n: tensor_bytes(d, s) for n, d, s in profile.tensors}
    # Replicated under mlx-lm's shard(): embeddings, LM head, every norm.
    replicated = sum(b for n, b in whole.items() if not re.search(r"_proj\.", n))
    assert replicated == sum(
        b for n, b in whole.items() if "embed" in n or "lm_head" in n or "norm" in n
    )
    for rank in pe.ranks:
        assert rank.replicated_weight_bytes == replicated
        assert rank.estimate.weights_bytes == rank.sharded_weight_bytes + replicated
    assert 2 * pe.ranks[0].sharded_weight_bytes + replicated == pe.single.weights_bytes


def test_quantized_scales_and_biases_follow_their_weight() -> None:
    assert tensor_rule("model.layers.3.self_attn.q_proj.scales").value == "all-to-sharded"
    assert tensor_rule("model.layers.3.mlp.down_proj.biases").value == "sharded-to-all"
    assert tensor_rule("model.layers.3.self_attn.o_proj.bias").value == "replicated"
    assert tensor_rule("model.layers.3.mlp.switch_mlp.up_proj.weight").value == "all-to-sharded"
    assert tensor_rule("model.layers.3.mlp.gate.weight").value == "replicated"
    assert tensor_rule("model.layers.3.input_layernorm.weight").value == "replicated"


def test_pp2_layers_and_kv_add_up_and_non_layer_tensors_are_on_every_rank() -> None:
    profile = load_profile(QWEN25_4BIT)
    assert profile.tensors is not None
    pe = plan_for(QWEN25_4BIT, PP2)
    assert [r.layers for r in pe.ranks] == [(14, 28), (0, 14)]  # rank 0 runs the last layers
    assert sum(r.estimate.kv_bytes for r in pe.ranks) == pe.single.kv_bytes
    non_layer = sum(tensor_bytes(d, s) for n, d, s in profile.tensors if ".layers." not in n)
    for rank in pe.ranks:
        assert rank.replicated_weight_bytes == non_layer
    own = sum(r.sharded_weight_bytes for r in pe.ranks)
    assert own + non_layer == pe.single.weights_bytes
    assert pe.weights_bytes == pe.single.weights_bytes + non_layer  # one extra copy


def test_tp_load_peak_is_the_whole_checkpoint_and_pp_loads_only_its_own() -> None:
    tp = plan_for(LLAMA_4BIT, TP2)
    gate_slice = 14336 // 2 * 512 * 4  # half of gate_proj.weight: 7168 rows of 512 U32 words
    assert gate_slice == 14_680_064
    for rank in tp.ranks:
        assert rank.load_peak_bytes == tp.single.weights_bytes + 2 * gate_slice
        assert rank.peak_bytes == rank.load_peak_bytes > rank.estimate.total_bytes
    pp = plan_for(QWEN25_4BIT, PP2)
    for rank in pp.ranks:
        assert rank.load_peak_bytes == rank.estimate.weights_bytes
        assert rank.peak_bytes == rank.estimate.total_bytes


def test_a_rank_whose_load_does_not_fit_fails_the_plan() -> None:
    profile = load_profile(LLAMA_4BIT)
    assert profile.tensors is not None
    limit = 4_500_000_000  # above the running total (4,484,554,035), below the load peak
    pe = estimate_parallel(
        profile_snapshot(profile), profile.tensors, TP2, Workload(max_tokens=4096), settings(),
        [limit, limit],
    )  # fmt: skip
    assert all(r.estimate.fits for r in pe.ranks)  # the running total alone would fit
    assert not pe.fits
    assert pe.ranks[0].overflow_bytes == 4_546_764_800 - limit


def test_pipeline_ranges_follow_mlx_lm() -> None:
    assert pipeline_ranges(28, 3) == [(18, 28), (9, 18), (0, 9)]
    assert pipeline_ranges(48, 2) == [(24, 48), (0, 24)]
    with pytest.raises(ShardingError, match="at least one per rank"):
        pipeline_ranges(2, 3)


@pytest.mark.parametrize("plan", [TP2, PP2])
def test_every_rocm_rank_carries_its_own_inflight_reserve(plan: ParallelPlan) -> None:
    rocm = plan_for(QWEN3_MOE_4BIT, plan)
    cpu = plan_for(QWEN3_MOE_4BIT, plan, Backend.CPU)
    for r_rocm, r_cpu in zip(rocm.ranks, cpu.ranks, strict=True):
        assert r_rocm.estimate.backend_inflight_bytes == GIB
        assert r_cpu.estimate.backend_inflight_bytes == 0
        assert r_rocm.estimate.total_bytes - r_cpu.estimate.total_bytes == GIB


def test_single_device_estimate_is_unchanged() -> None:
    profile = load_profile(LLAMA_4BIT)
    pe = plan_for(LLAMA_4BIT, TP2)
    assert pe.single == estimate(profile_snapshot(profile), Workload(max_tokens=4096), settings())


@pytest.mark.parametrize(
    ("repo", "plan", "message"),
    [
        (LLAMA_4BIT, PP2, "has no model.pipeline"),
        ("google/gemma-3-4b-it", TP2, "has no Model.shard"),
        ("deepseek-ai/DeepSeek-V2-Lite", TP2, "vramscope models the sharding of"),
        (LLAMA_4BIT, ParallelPlan(ParallelKind.TENSOR, 3), "32 attention heads do not divide"),
        (QWEN3_MOE_4BIT, ParallelPlan(ParallelKind.TENSOR, 8), "4 KV heads do not divide by 8"),
    ],
)
def test_refused_plans_say_why(repo: str, plan: ParallelPlan, message: str) -> None:
    with pytest.raises(ShardingError, match=message):
        plan_for(repo, plan)


def test_a_split_axis_that_does_not_divide_is_refused() -> None:
    profile = load_profile(QWEN25_4BIT)  # 28 heads, 4 KV heads; 18944 intermediate
    assert profile.tensors is not None
    tensors = [(n, d, s) for n, d, s in profile.tensors]
    tensors.append(("model.layers.0.mlp.gate_proj.bias", "F16", (3,)))
    with pytest.raises(ShardingError, match="cannot be split 2 ways"):
        estimate_parallel(profile_snapshot(profile), tensors, TP2, Workload(), settings())


def test_rank_limits() -> None:
    assert parse_rank_limits("24G", 2) == [24 * GIB, 24 * GIB]
    assert parse_rank_limits("24G, 16GB", 2) == [24 * GIB, 16 * GIB]
    assert parse_rank_limits(None, 2) is None
    with pytest.raises(ShardingError, match="3 sizes for 2 ranks"):
        parse_rank_limits("1G,2G,3G", 2)
    with pytest.raises(ShardingError, match="'lots' is not a size"):
        parse_rank_limits("24G,lots", 2)


def test_uneven_devices_plan_fails_on_the_small_rank() -> None:
    profile = load_profile(LLAMA_4BIT)
    assert profile.tensors is not None
    pe = estimate_parallel(
        profile_snapshot(profile),
        profile.tensors,
        TP2,
        Workload(max_tokens=4096),
        settings(),
        [24 * GIB, 4 * GIB],
    )
    assert [r.fits for r in pe.ranks] == [True, False]
    assert not pe.fits
    assert pe.failing_ranks == (1,)


@pytest.mark.parametrize("plan", [TP2, PP2])
def test_a_folder_splits_like_its_profile(skeleton, plan: ParallelPlan) -> None:
    folder = skeleton(QWEN25_4BIT)
    model, tensors = resolve_parallel_model(str(folder))
    from_folder = estimate_parallel(model, tensors, plan, Workload(), settings())
    from_profile = plan_for(QWEN25_4BIT, plan, tokens=8192)
    assert [r.estimate.total_bytes for r in from_folder.ranks] == [
        r.estimate.total_bytes for r in from_profile.ranks
    ]


def test_an_index_with_placeholder_shards_cannot_be_split(skeleton) -> None:
    folder = skeleton(QWEN3_MOE_4BIT, "index-only")
    with pytest.raises(ShardingError, match="need every tensor's shape"):
        resolve_parallel_model(str(folder))


def test_cli_json_has_plan_totals_and_ranks(capsys) -> None:
    code = main(["inspect", LLAMA_4BIT, "--tp", "2", "-n", "4096", "--backend", "rocm",
                 "--memory-limit", "24G,4G", "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["parallel"] == {
        "kind": "tp", "ranks": 2, "mlx_lm_family": "llama", "mlx_lm_version": "0.32.2"
    }  # fmt: skip
    single = json.loads(_single_json(capsys))
    answer_keys = set(ANSWER_KEYS)  # the plan's, once, beside the ranks
    assert answer_keys <= set(data)
    single_keys = set(single) - {"vramscope_version"} - answer_keys
    assert len(data["ranks"]) == 2
    for rank in data["ranks"]:
        assert single_keys <= set(rank)
        assert rank["kv_bytes_total"] == 268_435_456
        assert rank["kv_bytes_per_token"]["fp16"] == 65_536
    assert data["total_bytes"] == sum(r["total_bytes"] for r in data["ranks"])
    assert [r["fits"] for r in data["ranks"]] == [True, False]
    assert (data["fits"], data["failing_ranks"]) == (False, [1])


def _single_json(capsys) -> str:
    assert main(["inspect", LLAMA_4BIT, "--json"]) == 0
    return capsys.readouterr().out


def test_cli_text_prints_each_rank_and_the_verdict(capsys) -> None:
    assert main(["inspect", QWEN25_4BIT, "--pp", "2", "-n", "4096", "--memory-limit", "8G"]) == 0
    out = capsys.readouterr().out
    assert "--- Rank 0 of 2: layers 14-27 + embeddings, final norm and LM head ---" in out
    assert "--- Rank 1 of 2: layers 0-13 + embeddings, final norm and LM head ---" in out
    assert out.count("=== Memory Estimate ===") == 2
    assert "PLAN FITS: every one of the 2 ranks fits" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([LLAMA_4BIT, "--pp", "2"], "mlx_lm.models.llama has no model.pipeline()"),
        ([LLAMA_4BIT, "--tp", "9"], "expected 1 to 8 ranks"),
        ([LLAMA_4BIT, "--tp", "2", "--memory-limit", "1G,2G,3G"], "3 sizes for 2 ranks"),
    ],
)
def test_cli_refusals_are_one_line_exit_2(capsys, argv: list[str], message: str) -> None:
    assert main(["inspect", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


def test_docs_worked_example_matches_the_code() -> None:
    section = DOCS.read_text(encoding="utf-8").split("## Per-rank estimates", 1)[1]
    tp = plan_for(LLAMA_4BIT, TP2)
    pp = plan_for(QWEN25_4BIT, PP2)
    for pe in (tp, pp):
        for rank in pe.ranks:
            est = rank.estimate
            for value in (
                est.weights_bytes,
                rank.sharded_weight_bytes,
                rank.replicated_weight_bytes,
                est.kv_bytes,
                est.activation_bytes,
                est.allocator_overhead_bytes,
                est.backend_inflight_bytes,
                est.total_bytes,
                rank.load_peak_bytes,
                rank.peak_bytes,
            ):
                assert f"{value:,}" in section, value
        assert f"{pe.single.total_bytes:,}" in section
