"""Shape-only runs and checkpoint layouts: what is measured when no weights are on disk,
and Hugging Face's per-expert layout loading like mlx-lm's stacked one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.measurement.protocol import MeasureNotice
from core.measurement.request import MeasureRequest
from core.measurement.result import MeasuredPeak
from core.measurement.run import MeasuredRun
from core.model.safetensors_header import read_header_json
from hip_backend import start_run
from hip_backend.model.manifest import plan_from_folder
from tests.hip_backend.conftest import write_skeleton_file
from tests.hip_backend.mlx_models import QWEN3_MOE_CONFIG, write_mlx_model
from tests.installed import Later, needs

torch = Later("torch")
pytestmark = needs("torch")


def skeleton_of(src: Path, dest: Path) -> Path:
    """The same config and header as `src`, over a sparse data region."""
    dest.mkdir()
    shutil.copy(src / "config.json", dest / "config.json")
    header, _, _ = read_header_json(src / "model.safetensors")
    tensors = {k: (v["dtype"], v["shape"]) for k, v in header.items() if k != "__metadata__"}
    write_skeleton_file(dest / "model.safetensors", tensors)
    return dest


def run(folder: Path) -> tuple[MeasuredPeak, list[str]]:
    notices: list[str] = []

    def on_event(event: object) -> None:
        if isinstance(event, MeasureNotice):
            notices.append(event.message)

    request = MeasureRequest(
        str(folder), prompt_tokens=16, gen_tokens=2, warmup_tokens=0, device="cpu"
    )
    outcome = start_run(request, on_event, record_history=False).wait(120)
    assert isinstance(outcome, MeasuredRun), outcome
    return outcome.peak, notices


def test_a_header_only_folder_is_measured_with_synthetic_weights(
    tiny_llama: Path, tmp_path: Path
) -> None:
    real_plan = plan_from_folder(tiny_llama)
    assert real_plan is not None
    folder = skeleton_of(tiny_llama, tmp_path / "skeleton")
    assert (folder / "model.safetensors").stat().st_blocks * 512 < real_plan.total_bytes / 2
    result, notices = run(folder)
    assert result.synthetic_weights
    assert result.weights_bytes == real_plan.total_bytes
    assert "synthetic weights: no weight data on disk in model.safetensors" in notices
    assert result.estimate_bytes is not None
    assert result.peak_bytes >= real_plan.total_bytes  # random fill touched every page


def test_a_config_only_folder_gets_the_tensors_mlx_lm_would_write(
    tiny_llama: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "config-only"
    folder.mkdir()
    shutil.copy(tiny_llama / "config.json", folder / "config.json")
    result, notices = run(folder)
    real = plan_from_folder(tiny_llama)
    assert real is not None
    assert result.synthetic_weights
    assert result.weights_bytes == real.total_bytes
    assert any("shapes from config.json" in n for n in notices)


def test_hugging_face_per_expert_tensors_load_like_stacked_ones(tmp_path: Path) -> None:
    pytest.importorskip("mlx_lm")
    from safetensors.numpy import load_file, save_file

    from hip_backend.model.source import ModelSource, resolve_source
    from hip_backend.torch_engine.decoder import MoeMlp
    from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent
    from hip_backend.torch_engine.loader import build_model

    config = {**QWEN3_MOE_CONFIG, "torch_dtype": "float32"}
    stacked = write_mlx_model(tmp_path / "stacked", config, bits=None)
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text((stacked / "config.json").read_text())
    tensors = load_file(stacked / "model.safetensors")
    split = {}
    for name, value in tensors.items():
        if ".switch_mlp." in name:
            for e in range(value.shape[0]):
                split[name.replace(".switch_mlp.", f".experts.{e}.")] = value[e].copy()
        else:
            split[name] = value
    save_file(split, hf / "model.safetensors", metadata={"format": "pt"})
    assert "model.layers.1.mlp.experts.7.down_proj.weight" in split

    models, logits = [], []
    for folder in (stacked, hf):
        resolved = resolve_source(ModelSource(folder=folder))
        model = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
        queue = InflightQueue(0, LaggingEvent)
        with torch.no_grad():
            logits.append(model.forward(torch.tensor([[1, 2, 3]]), model.new_cache(queue), queue))
        models.append(model)
    for a, b in zip(models[0].blocks, models[1].blocks, strict=True):
        assert isinstance(a.mlp, MoeMlp)
        assert isinstance(b.mlp, MoeMlp)
        for name in ("gate_proj", "up_proj", "down_proj"):
            assert torch.equal(getattr(a.mlp, name).weight, getattr(b.mlp, name).weight)
    # Same weights; float32 GEMMs may pick other kernels for other memory alignments.
    assert torch.allclose(logits[0], logits[1], rtol=0, atol=1e-5)
