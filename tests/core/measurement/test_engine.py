"""The Engine type and what each engine declares: names, labels, options checked once,
the one "held against" rule, and the typed result fields with their encoding."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest

from core.backend import Backend
from core.measurement.comparison import expected_backend, held_against
from core.measurement.engine import (
    ATTENTION,
    DEFAULT_ENGINE,
    ENGINE_CHOICES,
    ENGINE_NAMES,
    ENGINE_SPECS,
    Engine,
    check_options,
)
from core.measurement.fields import MlxFields, RankFields, TorchFields
from core.measurement.request import MeasureRequest
from core.measurement.result import MeasuredPeak, checked_peak


def test_an_engine_is_written_and_compared_as_its_name() -> None:
    assert ENGINE_NAMES == ("torch", "mlx", "external") and DEFAULT_ENGINE is Engine.TORCH
    assert [str(e) for e in ENGINE_CHOICES] == ["torch", "mlx"]  # what vramscope runs
    # A plain kind: written as its name where written, never equal to it.
    assert json.dumps({"engine": Engine.MLX.value}) == '{"engine": "mlx"}'
    with pytest.raises(TypeError):
        json.dumps({"engine": Engine.MLX})  # never written by accident as something else
    assert Engine.MLX != "mlx"
    assert f"{Engine.TORCH} engine" == "torch engine"
    assert Engine.named("mlx") is Engine.MLX and Engine.named(Engine.TORCH) is Engine.TORCH
    with pytest.raises(ValueError, match="engine: 'jax' is not one of torch, mlx, external"):
        Engine.named("jax")
    assert [e.label for e in Engine] == ["torch engine", "MLX (mlx-lm)", "your command"]
    with pytest.raises(ValueError, match="measured by `vramscope run -- CMD` only"):
        MeasureRequest("m", engine="external")


def test_every_engine_has_a_spec_naming_fields_a_result_has() -> None:
    assert set(ENGINE_SPECS) == set(Engine)
    peak_fields = {f.name for f in fields(MeasuredPeak)}
    for engine in Engine:
        assert set(engine.spec.result_fields) <= peak_fields, engine
        for option in engine.spec.options:
            assert option.default in option.choices
            assert hasattr(MeasureRequest("m"), option.name)


def test_the_options_are_checked_once_and_belong_to_their_engine() -> None:
    check_options(Engine.TORCH, {"emulate": "none", "attention": "torch-sdpa"})
    check_options(Engine.MLX, {"emulate": "auto"})
    with pytest.raises(ValueError, match="attention must be one of"):
        check_options(Engine.TORCH, {"attention": "flash"})
    with pytest.raises(ValueError, match="fuse_bf16 is an option of the torch engine"):
        MeasureRequest("m", engine="mlx", fuse_bf16="on")
    with pytest.raises(ValueError, match="mlx engine only"):
        MeasureRequest("m", engine=Engine.TORCH, kv_int8=True)
    assert MeasureRequest("m", engine="mlx").engine is Engine.MLX
    assert ATTENTION.labels["torch-sdpa"] == "torch's SDPA"


def _old_rule(engine: Engine, device: str, emulated: bool) -> Backend:
    """The rule as launcher.py, result.py and comparison.py wrote it before #19."""
    name = engine.value  # the old rule compared names
    if name != "mlx" and not emulated and device in ("cuda", "cpu"):
        return Backend(device)
    if name != "mlx":
        return Backend.ROCM
    return Backend(
        {"rocm": "rocm", "cuda": "cuda", "metal": "metal", "cpu": "cpu"}.get(device, "rocm")
    )


@pytest.mark.parametrize("engine", [Engine.TORCH, Engine.MLX])
@pytest.mark.parametrize("device", ["rocm", "cuda", "metal", "cpu", "gpu"])
@pytest.mark.parametrize("emulated", [True, False])
def test_the_held_against_rule_is_the_one_it_was(
    engine: Engine, device: str, emulated: bool
) -> None:
    assert held_against(engine, device, emulated_queue=emulated) is _old_rule(
        engine, device, emulated
    )


@pytest.mark.parametrize("device", ["rocm", "cuda", "metal", "cpu"])
def test_a_command_s_peak_is_held_against_its_own_device_s_formula(device: str) -> None:
    # `vramscope run` names the device its figure was read on: that device's formula.
    for emulated in (True, False):
        assert held_against(Engine.EXTERNAL, device, emulated_queue=emulated) is Backend(device)


def test_the_expected_formula_before_a_run() -> None:
    assert {expected_backend(Engine.TORCH, d) for d in ("auto", "rocm", "cuda", "cpu")} == {
        Backend.ROCM
    }
    assert expected_backend(Engine.MLX, "cpu") is Backend.CPU
    assert expected_backend(Engine.MLX, "cuda") is Backend.CUDA


TORCH_EXTRA: dict[str, Any] = {
    "inflight_emulation": "rocm",
    "inflight_commits": 3,
    "inflight_waits": 1,
    "inflight_max_committed_bytes": 10,
    "inflight_max_held_bytes": 9,
    "ops": 120,
    "fused_bf16_modules": 0,
    "attention": "mlx-fallback",
    "sdpa_backend": {},
    "generated_tokens": [1, 2, 3],
    "drm_vram_delta_bytes": 5,
    "drm_gtt_delta_bytes": 6,
    "pci_bus_id": "0000:c3:00.0",
    "allocator_settings": {"PYTORCH_HIP_ALLOC_CONF": "expandable_segments:True"},
}
CPU_TORCH_EXTRA = {
    k: v
    for k, v in TORCH_EXTRA.items()
    if k not in ("drm_vram_delta_bytes", "drm_gtt_delta_bytes", "pci_bus_id", "allocator_settings")
}
MLX_EXTRA = {"generated_tokens": [4, 5], "mlx_memory_limit_bytes": 1 << 30}
RANK_EXTRA = {
    "parallel": None,
    "rank": 0,
    "ranks": 1,
    "layers": None,
    "seconds": {"import": 1.5, "join": 0.0, "load": 0.25, "workload": 2.0},
}


@pytest.mark.parametrize(
    ("kind", "extra"),
    [
        (TorchFields, TORCH_EXTRA),
        (TorchFields, CPU_TORCH_EXTRA),
        (MlxFields, MLX_EXTRA),
        (RankFields, RANK_EXTRA),
        (RankFields, {**RANK_EXTRA, "parallel": "pp", "layers": [0, 4], "ranks": 2}),
    ],
)
def test_typed_fields_write_what_a_run_always_wrote(kind: Any, extra: dict[str, Any]) -> None:
    """Key for key and in order: the history and `--json` stay byte-identical."""
    again = kind.from_extra(extra).to_extra()
    assert json.dumps(again) == json.dumps(extra)


def peak(**kw: Any) -> MeasuredPeak:
    base: dict[str, Any] = {
        "model": "m",
        "device_kind": "cpu",
        "device_name": "CPU",
        "peak_bytes": 1,
        "peak_kind": "k",
        "inflight_mib": 1024,
        "prompt_tokens": 1,
        "gen_tokens": 1,
        "synthetic_weights": False,
        "load_seconds": 0.0,
        "prefill_tokens_per_s": 0.0,
        "decode_tokens_per_s": 0.0,
        "torch_version": "2",
    }
    return MeasuredPeak(**{**base, **kw})


def test_old_records_read_with_the_defaults_they_always_had() -> None:
    old = peak()  # before engines, the queue choice and the attention choice
    assert old.engine is Engine.TORCH and old.emulated_queue and old.attention_label is None
    assert isinstance(old.fields, TorchFields) and old.fields.inflight_commits is None
    off = peak(extra={"inflight_emulation": "none", "attention": "torch-sdpa"})
    assert not off.emulated_queue and off.attention_label == "torch's SDPA"
    assert off.estimate_backend is Backend.CPU
    mlx = peak(engine="mlx", extra=MLX_EXTRA)
    assert isinstance(mlx.fields, MlxFields) and mlx.fields.mlx_memory_limit_bytes == 1 << 30
    assert not mlx.emulated_queue and mlx.attention_label is None
    rank = peak(engine="mlx", extra=RANK_EXTRA)
    assert isinstance(rank.fields, RankFields) and rank.fields.ranks == 1


def test_a_record_naming_no_engine_of_ours_is_damaged() -> None:
    good = peak().to_dict()
    assert checked_peak({**good, "engine": "mlx"}).engine is Engine.MLX
    with pytest.raises(TypeError, match="'engine' is 3, not str"):
        checked_peak({**good, "engine": 3})
    with pytest.raises(TypeError, match="'engine' is \"jax\", not one of torch, mlx"):
        checked_peak({**good, "engine": "jax"})
