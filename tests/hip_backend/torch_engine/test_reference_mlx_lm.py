"""The engine against mlx-lm on tiny models written by mlx and mlx-lm.

Each model is written the way `mlx_lm.convert -q` writes one (quantize_model,
save_model, save_config), then run greedily in mlx-lm and in the engine on the
CPU. The logits of every step must agree within the case's tolerance and the
greedy tokens must be equal.

Two facts shape the comparison:
- mlx's CPU `quantized_matmul` accumulates in the activation dtype: against an
  exactly rounded GEMM it is off by up to 0.047 (F16) and 0.44 (BF16) at logit
  scale 6-7 (measured). The engine, like MLX's ROCm dequantize-and-GEMM path,
  dequantizes (bit-identically to mx.dequantize) and accumulates in float32. So
  most cases compare with mlx-lm running the same mx.dequantize'd weights in
  float32, which isolates the engine's own 16-bit rounding; the Llama case also
  compares with mlx-lm exactly as written, with a tolerance that covers mlx's
  CPU kernel.
- 4-bit modules run torch's CPU int4 kernel (hip_backend/torch_engine/int4_cpu.py), which adds
  one rounding of the zero point to the scales' dtype (BF16_INT4_TOLERANCE).
- Greedy decoding and top-k routing are discontinuous: where two candidates are
  closer than the rounding noise, either engine may pick either. Each model is
  the first seed whose mlx-lm run keeps every top-1 margin and routing gap above
  the case's margin, so equal tokens test the engine, not the rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hip_backend.model.source import ModelSource, resolve_source
from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent
from hip_backend.torch_engine.loader import build_model
from tests.hip_backend.mlx_models import (
    LLAMA_CONFIG,
    QWEN3_MOE_CONFIG,
    Reference,
    mlx_lm_reference,
    write_mlx_model,
)
from tests.installed import Later, needs

torch = Later("torch")
pytestmark = needs("torch", "mlx_lm")

PROMPT = [3, 41, 7, 200, 9, 15, 90, 2, 33, 121, 64, 5]
STEPS = 12
SEEDS = 16

QWEN2_CONFIG = {
    **{k: v for k, v in LLAMA_CONFIG.items() if k != "rope_scaling"},
    "model_type": "qwen2",
    "rope_theta": 1000000.0,
}
QWEN3_CONFIG = {
    **{k: v for k, v in QWEN3_MOE_CONFIG.items() if "expert" not in k and "moe" not in k},
    "model_type": "qwen3",
}
for key in ("decoder_sparse_step", "mlp_only_layers", "norm_topk_prob"):
    QWEN3_CONFIG.pop(key)


def engine_run(path: Path, prompt: list[int], tokens: list[int]) -> list[Any]:
    """Last-position logits of the engine over the prompt and then each given token."""
    resolved = resolve_source(ModelSource(folder=path))
    assert not resolved.plan.synthetic
    model = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
    queue = InflightQueue(64 << 20, LaggingEvent)
    caches = model.new_cache(queue)
    torch.set_grad_enabled(False)
    rows = [model.forward(torch.tensor([prompt]), caches, queue)[0].float()]
    for token in tokens[:-1]:
        queue.sync()
        rows.append(model.forward(torch.tensor([[token]]), caches, queue)[0].float())
    queue.sync()
    return rows


def well_conditioned(case: Case, tmp_path: Path) -> tuple[Path, Reference]:
    """The first seed from the case's own whose mlx-lm run has no near-ties (see the
    module docstring)."""
    for seed in range(case.first_seed, case.first_seed + SEEDS):
        path = write_mlx_model(tmp_path / f"seed{seed}", case.config, seed=seed, **case.write)
        ref = mlx_lm_reference(path, PROMPT, STEPS, dequantized_f32=case.dequantized)
        if ref.min_margin >= case.margin and ref.route_gap >= case.margin:
            return path, ref
    pytest.fail(f"no seed in {SEEDS} gave a reference run without near-ties")


@dataclass(frozen=True)
class Case:
    """A model to write, how to run the reference, and the stated tolerance."""

    config: dict[str, Any]
    write: dict[str, Any] = field(default_factory=dict)
    dequantized: bool = True
    tolerance: float = 0.03
    """Max |engine logit - mlx-lm logit| over every step (logits span about +-2.5)."""
    margin: float = 0.01
    """Smallest top-1 margin and routing gap accepted in the reference run: a few
    times the engine's own rounding noise (about 0.005 in F16, 0.02 in BF16)."""
    first_seed: int = 0
    """Where the search for a well-conditioned seed starts. It is still checked: a seed
    whose reference run has a near-tie is passed over."""


BF16_INT4_TOLERANCE = 0.05
"""BF16 4-bit models on the CPU run torch's int4 kernel
(hip_backend/torch_engine/int4_cpu.py), whose zero point `bias + 8 * scale` is rounded
once to BF16: measured up to 0.038 here, against 0.03 with MLX's own bias; mlx's CPU
kernel itself is off by up to 0.44 (see above)."""
MOE_F16 = {**QWEN3_MOE_CONFIG, "torch_dtype": "float16"}
WIDE_ROUTER = {"router_scale": 8.0}
CASES = {
    "llama-4bit-f16-llama3-rope": Case(LLAMA_CONFIG),
    # Seeds 0-2 had a top-1 margin under 0.05; each reference run through MLX's CPU F16
    # 4-bit kernel took 0.9 s of processor time.
    "llama-4bit-f16-as-written": Case(
        LLAMA_CONFIG, dequantized=False, tolerance=0.05, margin=0.05, first_seed=3
    ),
    "qwen3_moe-4bit-f16-8bit-router": Case(MOE_F16, WIDE_ROUTER),
    "qwen3_moe-4bit-bf16-8bit-router": Case(
        QWEN3_MOE_CONFIG, WIDE_ROUTER, tolerance=BF16_INT4_TOLERANCE, margin=0.04
    ),
    "qwen3-4bit-bf16-qk-norm": Case(QWEN3_CONFIG, tolerance=BF16_INT4_TOLERANCE, margin=0.04),
    "qwen2-8bit-f16-qkv-bias": Case(QWEN2_CONFIG, {"bits": 8}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_engine_matches_mlx_lm(case: str, tmp_path: Path) -> None:
    path, ref = well_conditioned(CASES[case], tmp_path)
    rows = engine_run(path, PROMPT, ref.tokens)
    worst = max(
        float((row - torch.from_numpy(expected)).abs().max())
        for row, expected in zip(rows, ref.logits, strict=True)
    )
    assert worst <= CASES[case].tolerance, f"{case}: logits differ by up to {worst:.4f}"
    assert [int(row.argmax()) for row in rows] == ref.tokens


def test_mlx_written_model_has_the_mlx_community_layout(tiny_llama: Path) -> None:
    """What the fixtures write is what mlx-community ships: U32 words, F16 scales, an index."""
    import json

    from core.model.safetensors_header import read_header_json

    header, _, _ = read_header_json(tiny_llama / "model.safetensors")
    assert header["__metadata__"] == {"format": "mlx"}
    q = header["model.layers.0.self_attn.q_proj.weight"]
    assert (q["dtype"], q["shape"]) == ("U32", [256, 32])
    assert header["model.layers.0.self_attn.q_proj.scales"]["dtype"] == "F16"
    config = json.loads((tiny_llama / "config.json").read_text())
    assert config["quantization"]["bits"] == 4
    assert (tiny_llama / "model.safetensors.index.json").is_file()
