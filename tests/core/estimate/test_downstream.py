"""What mlxcel derives from the estimate (spec section 8)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core.backend import Backend
from core.catalog.model_dir import read_model_dir
from core.catalog.profiles import load_profile, profile_snapshot
from core.estimate.downstream import (
    BudgetDirectiveKind,
    auto_kv_budget_bytes,
    blocks_for_budget,
    bounded_capacity,
    paged_block_bytes,
    paged_v2_workspace_reserve_bytes,
    parse_budget_directive,
    qwen3_next_fixed_state_bytes,
    recommend_quantization,
    representative_tokens,
)
from core.estimate.estimate import Workload, estimate, kv_bytes_per_token
from core.estimate.prompt_cache import PromptCacheStore, prompt_cache_capacity
from core.model.config import ModelConfig
from tests.core.helpers import LLAMA_4BIT, MINIMAL_CONFIG, settings


def test_auto_kv_budget_inverts_the_fit() -> None:
    assert auto_kv_budget_bytes(25 * 10**9, 10 * 10**9, 10**9, 0, 1.2) == 10_000_000_000
    assert auto_kv_budget_bytes(25 * 10**9, 10 * 10**9, 10**9, 10**9, 1.2) == 9_166_666_666
    assert auto_kv_budget_bytes(16 * 10**9, 30 * 10**9, 10**9, 0, 1.2) == 0
    w, a, i, avail = 10 * 10**9, 10**9, 10**9, 25 * 10**9
    budget = auto_kv_budget_bytes(avail, w, a, i, 1.2)
    assert int(1.2 * (w + budget)) + a + i <= avail
    assert auto_kv_budget_bytes(10, 2, 0, 0, 0.5) == 8  # factors <= 1 act as 1


def test_paged_block_bytes() -> None:
    assert paged_block_bytes(131_072, 32, 32) == 131_072
    assert paged_block_bytes(65_536, 32, 32) == 65_536
    assert paged_block_bytes(12_288, 24, 16) == 8_192
    assert paged_block_bytes(131_072, 0, 32) is None
    assert paged_block_bytes(131_072, 32, 0) is None
    assert paged_block_bytes(None, 32, 32) is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("auto", "auto"),
        ("AUTO", "auto"),
        ("none", "disabled"),
        ("NONE", "disabled"),
        ("off", "disabled"),
        ("disabled", "disabled"),
        ("unbounded", "disabled"),
        (" none ", "disabled"),
        ("0", "disabled"),
        (" 8589934592 ", "bytes"),
    ],
)
def test_budget_directive(text: str, kind: str) -> None:
    parsed = parse_budget_directive(text)
    assert parsed.kind is BudgetDirectiveKind(kind)
    if kind == "bytes":
        assert parsed.bytes == 8_589_934_592


@pytest.mark.parametrize("text", ["8GiB", "-5", "lots"])
def test_budget_directive_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="--kv-cache-budget"):
        parse_budget_directive(text)


def test_workspace_reserve_and_blocks() -> None:
    cfg = ModelConfig.from_dict(MINIMAL_CONFIG)
    ws = paged_v2_workspace_reserve_bytes(cfg, 1)
    assert ws == 17_040_384
    assert 0 < paged_v2_workspace_reserve_bytes(cfg, 4) < 64 * 1024 * 1024
    assert paged_v2_workspace_reserve_bytes(None, 1) == 0
    pb = 131_072
    assert blocks_for_budget(ws + 100 * pb, pb, ws) == 100
    assert blocks_for_budget(ws + 100 * pb + pb - 1, pb, ws) == 100
    for budget in (0, 1, ws // 2, ws - 1, ws, ws + pb - 1):
        assert blocks_for_budget(budget, pb, ws) == 0
    assert blocks_for_budget(ws + pb, pb, ws) == 1


def test_prompt_cache_sizing_rules() -> None:
    assert representative_tokens(0) == 8192
    assert representative_tokens(10) == 32
    assert representative_tokens(100_000) == 8192
    assert bounded_capacity(100, 7, None) == 600
    assert bounded_capacity(100, 7, 0) == 7  # a known zero keeps the compiled default
    assert bounded_capacity(100, 7, 1000) == 250  # quarter ceiling
    assert bounded_capacity(100, 7, 150) == 37  # one entry does not fit in half: no floor
    assert bounded_capacity(100, 7, 300) == 100  # the one-entry floor beats the ceiling


def test_rocm_prompt_cache_ceiling_drops_by_a_quarter_of_the_budget() -> None:
    model = profile_snapshot(load_profile(LLAMA_4BIT))
    small = 16 * 1024**3  # small enough that the quarter ceiling binds
    rocm = prompt_cache_capacity(model, settings(available=small), 0)
    cuda = prompt_cache_capacity(model, settings(backend=Backend.CUDA, available=small), 0)
    assert rocm.store is PromptCacheStore.KV
    assert cuda.capacity_bytes - rocm.capacity_bytes == 268_435_456


def test_snapshot_store_for_hybrid_models() -> None:
    model = profile_snapshot(load_profile("Qwen/Qwen3-Next-80B-A3B-Instruct"))
    cap = prompt_cache_capacity(model, settings(available=10**15), 8192)
    assert cap.store is PromptCacheStore.SNAPSHOT
    assert model.config is not None
    assert cap.entry_bytes == 24_576 * 8192 + qwen3_next_fixed_state_bytes(model.config)


def test_recommend_quantization() -> None:
    assert recommend_quantization(7.0, 32, None, neural_accelerator=True).quant == "int8"
    r = recommend_quantization(70.0, 64, None, neural_accelerator=True)
    assert r.quant == "int4" and r.reason.startswith("M5 NA available but 8-bit")
    assert recommend_quantization(1.0, 24, None).quant == "fp16"
    assert recommend_quantization(8.0, 16, None).reason.startswith("Best balance")
    assert recommend_quantization(7.0, 32, None, neural_accelerator=False).quant == "fp16"
    assert recommend_quantization(30.0, 16, None, True).reason.startswith("Memory constrained")
    assert recommend_quantization(7.0, 0, None).reason.startswith("Memory constrained")


def test_auto_budget_through_a_real_estimate(model_dir: Callable[..., Path]) -> None:
    model = read_model_dir(model_dir(MINIMAL_CONFIG))
    big = estimate(model, Workload(8192), settings(backend=Backend.CPU, available=256 * 1024**3))
    small = estimate(model, Workload(8192), settings(backend=Backend.CPU, available=32 * 1024**3))
    tiny = estimate(model, Workload(8192), settings(backend=Backend.CPU, available=1024**3))

    def blocks(e) -> int:  # type: ignore[no-untyped-def]
        per_block = paged_block_bytes(kv_bytes_per_token(model, False), 32, 32)
        assert per_block is not None
        budget = auto_kv_budget_bytes(
            e.available_bytes,
            e.weights_bytes,
            e.activation_bytes,
            e.backend_inflight_bytes,
            e.headroom_factor,
        )
        return blocks_for_budget(budget, per_block, 0)

    assert blocks(big) > blocks(small) > 0
    assert blocks(tiny) == 0
