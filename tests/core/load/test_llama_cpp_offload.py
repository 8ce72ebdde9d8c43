"""llama.cpp's partial offload, flags and per-architecture rules in vramscope's model (#40)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from core.errors import ModelError, UsageError
from core.gguf.record import GgufModel
from core.load.llama_cpp import (
    FlashAttn,
    KvCacheType,
    LlamaCppOptions,
    largest_context,
    largest_gpu_layers,
    plan_for_gguf,
    plan_for_model,
)
from core.load.load import LoadEngine, Origin, Placement, TermKind
from tests.gguf_llama_models import read_model, write_model
from tests.gguf_models import write_mmproj


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> dict[str, GgufModel]:
    folder = tmp_path_factory.mktemp("gguf")
    return {
        arch: read_model(write_model(folder, arch)) for arch in ("llama", "qwen3", "gemma3", "phi3")
    }


def plan(synthesized, arch: str, **flags: Any):
    return plan_for_model(synthesized[arch], LlamaCppOptions(**flags))


def share(load, placement: Placement) -> int:
    return sum(s.total_bytes for s in load.shares if s.placement is placement)


@pytest.mark.parametrize("arch", ["llama", "qwen3", "gemma3"])
def test_device_and_host_shares_add_up_to_the_whole_at_every_layer_count(synthesized, arch) -> None:
    n_layer = plan(synthesized, arch).hparams.n_layer
    for ngl in [-1, *range(n_layer + 3)]:
        load = plan(synthesized, arch, n_gpu_layers=ngl, parallel=2).at(3000)
        assert load.engine is LoadEngine.LLAMA_CPP
        assert share(load, Placement.DEVICE) + share(load, Placement.HOST) == load.total_bytes, ngl
        assert load.device_bytes == share(load, Placement.DEVICE)


def test_layers_go_to_the_device_from_the_last_the_output_layer_first(synthesized) -> None:
    """llama.cpp (this version) offloads its layers from the output layer down:
    `-ngl 1` puts only the output layer on the device, `-ngl n_layer + 1` everything but
    the token embeddings, which stay on the host at any count."""
    tensors = synthesized["llama"].tensors
    size = {t.name: t.nbytes for t in tensors}
    output_layer = size["output.weight"] + size["output_norm.weight"]
    last_block = sum(b for n, b in size.items() if n.startswith("blk.3."))

    def device_weights(ngl: int) -> int:
        load = plan(synthesized, "llama", n_gpu_layers=ngl).at(1024)
        dev = next(s for s in load.shares if s.placement is Placement.DEVICE)
        return sum(t.bytes for t in dev.terms if t.kind is TermKind.WEIGHTS)

    assert device_weights(1) == output_layer
    assert device_weights(2) == output_layer + last_block
    everything = sum(size.values()) - size["token_embd.weight"]
    assert device_weights(5) == everything
    assert device_weights(-1) == everything
    assert device_weights(99) == everything


def test_the_kv_cache_follows_its_layer_and_no_kv_offload_keeps_it_on_the_host(synthesized) -> None:
    one_layer = plan(synthesized, "llama", n_gpu_layers=2).at(2048)
    whole = one_layer.kv_bytes
    device_kv = sum(
        t.bytes
        for s in one_layer.shares
        if s.placement is Placement.DEVICE
        for t in s.terms
        if t.kind is TermKind.KV
    )
    assert device_kv * 4 == whole  # one of the four layers is on the device
    kept = plan(synthesized, "llama", n_gpu_layers=-1, kv_offload=False).at(2048)
    host_kv = sum(
        t.bytes
        for s in kept.shares
        if s.placement is Placement.HOST
        for t in s.terms
        if t.kind is TermKind.KV
    )
    assert host_kv == kept.kv_bytes == whole


def test_a_tied_output_is_duplicated_onto_the_device(synthesized) -> None:
    """qwen3 here has no output.weight: llama.cpp loads token_embd.weight a second time as
    the output on the output layer's device, the host keeping its own copy."""
    tensors = synthesized["qwen3"].tensors
    embd = next(t.nbytes for t in tensors if t.name == "token_embd.weight")
    on_host = plan(synthesized, "qwen3", n_gpu_layers=0).at(1024)
    offloaded = plan(synthesized, "qwen3", n_gpu_layers=1).at(1024)
    assert offloaded.weights_bytes == on_host.weights_bytes + embd
    dup = [
        t for t in offloaded.terms if t.origin is Origin.ENGINE_RULE and t.kind is TermKind.WEIGHTS
    ]
    assert [t.bytes for t in dup] == [embd]


def test_largest_gpu_layers_is_the_most_that_fits(synthesized) -> None:
    p = plan(synthesized, "gemma3", parallel=1)
    n_layer = p.hparams.n_layer
    at = {
        n: p.with_options(replace(p.options, n_gpu_layers=n)).at(8192).device_bytes
        for n in range(1, n_layer + 2)
    }
    assert all(at[n] < at[n + 1] for n in range(1, n_layer + 1))
    assert largest_gpu_layers(p, 8192, at[n_layer + 1]) == n_layer + 1
    assert largest_gpu_layers(p, 8192, at[4]) == 4
    assert largest_gpu_layers(p, 8192, at[4] - 1) == 3
    assert largest_gpu_layers(p, 8192, at[1] - 1) == 0


def test_a_quantized_v_cache_needs_flash_attention() -> None:
    with pytest.raises(UsageError, match="--flash-attn on"):
        LlamaCppOptions(cache_type_v=KvCacheType.Q8_0, flash_attn=FlashAttn.OFF)
    LlamaCppOptions(cache_type_k=KvCacheType.Q8_0, flash_attn=FlashAttn.OFF)  # K alone is fine


def test_cache_types_are_named_as_llama_cpp_names_them() -> None:
    assert KvCacheType.named("--cache-type-k", "Q4_0") is KvCacheType.Q4_0
    assert KvCacheType.Q8_0.row_bytes(128) == 136
    assert KvCacheType.Q4_0.row_bytes(128) == 72
    with pytest.raises(UsageError, match=r"--cache-type-k.*q3_k"):
        KvCacheType.named("--cache-type-k", "q3_k")


@pytest.mark.parametrize(
    ("flags", "flag"),
    [
        ({"parallel": 0}, "--parallel"),
        ({"n_gpu_layers": -2}, "--n-gpu-layers"),
        ({"ubatch_size": 0}, "--ubatch-size"),
    ],
)
def test_bad_flags_are_refused_naming_the_flag(flags, flag) -> None:
    with pytest.raises(UsageError, match=flag):
        LlamaCppOptions(**flags)


def test_phi3s_sliding_window_is_off_as_in_llama_cpp(synthesized) -> None:
    model = synthesized["phi3"]
    meta = {**model.metadata, "phi3.attention.sliding_window": 2047}  # as Phi-3-mini's GGUF
    p = plan_for_gguf(meta, model.tensors, "phi3.gguf")
    assert p.hparams.n_swa == 0
    assert not any(p.hparams.is_swa)
    assert any("sliding window" in n and "off" in n for n in p.notes)


def test_an_unknown_architecture_is_answered_with_the_standard_cache_and_said(synthesized) -> None:
    meta, tensors = synthesized["llama"].metadata, synthesized["llama"].tensors
    renamed = {k.replace("llama.", "newarch.", 1): v for k, v in meta.items()}
    renamed["general.architecture"] = "newarch"
    p = plan_for_gguf(renamed, tensors, "new.gguf", LlamaCppOptions())
    known = plan_for_gguf(meta, tensors, "llama.gguf", LlamaCppOptions())
    assert p.at(4096).kv_bytes == known.at(4096).kv_bytes
    assert any("newarch" in n for n in p.notes)


def test_a_missing_key_names_the_file_and_the_key(synthesized) -> None:
    meta, tensors = synthesized["llama"].metadata, synthesized["llama"].tensors
    broken = {k: v for k, v in meta.items() if k != "llama.block_count"}
    with pytest.raises(ModelError, match=r"broken\.gguf: no llama\.block_count"):
        plan_for_gguf(broken, tensors, "broken.gguf")
    uneven = {**meta, "llama.attention.head_count_kv": [2, 2]}
    with pytest.raises(ModelError, match="head_count_kv has 2 values for 4 layers"):
        plan_for_gguf(uneven, tensors, "uneven.gguf")


def test_a_context_below_one_token_is_refused(synthesized) -> None:
    with pytest.raises(UsageError, match="--ctx-size"):
        plan(synthesized, "llama").at(0)


def test_a_projector_beside_the_model_is_counted_on_the_device(tmp_path) -> None:
    """An `mmproj-*.gguf` in the model's folder is read with it (core.gguf's pick) and its
    tensors are a PROJECTOR term, on the device when layers are offloaded."""
    model_path = write_model(tmp_path, "gemma3")
    write_mmproj(tmp_path / "mmproj-golden-gemma3-F16.gguf")
    model = read_model(model_path)
    assert model.projector is not None
    load = plan_for_model(model, LlamaCppOptions(n_gpu_layers=-1)).at(4096)
    assert load.bytes_of(TermKind.PROJECTOR) == model.projector.tensor_bytes > 0
    device = next(s for s in load.shares if s.placement is Placement.DEVICE)
    assert any(t.kind is TermKind.PROJECTOR for t in device.terms)
    on_host = plan_for_model(model, LlamaCppOptions(n_gpu_layers=0)).at(4096)
    assert [s.placement for s in on_host.shares] == [Placement.HOST]
    assert on_host.device_bytes == 0


def test_largest_context_is_the_last_token_count_that_fits(synthesized) -> None:
    """The answer is exact: one token more (the next 256-cell step) does not fit."""
    p = plan(synthesized, "llama", n_gpu_layers=-1, parallel=1)
    budget = p.at(5000).device_bytes
    best = largest_context(p, budget, ceiling=65536)
    assert best is not None
    assert p.at(best).device_bytes <= budget < p.at(best + 1).device_bytes
    assert best % 256 == 0  # the padded context ends on a 256-cell step
    assert largest_context(p, budget, ceiling=3000) == 3000
    assert largest_context(p, 1, ceiling=65536) is None
