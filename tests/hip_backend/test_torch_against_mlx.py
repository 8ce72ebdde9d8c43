"""The torch engine against real MLX on the CPU, like with like (#38).

The torch engine stands in for MLX's allocation where MLX cannot run (ROCm). With its
emulation of MLX-ROCm's in-flight queue off (`--emulate none`: MLX's CPU backend has
none), its CPU peak (the resident-set rise over the load) must lie within 0.95-1.05 of
MLX's own counter (`mx.get_peak_memory`) on the same model folder and workload, each
engine in a child process of its own. Two shapes of the 4-bit MoE grid that
`scripts/bench_measure.py --only moe-sweep` runs in full, at its two ends: the longest
prompt with the fewest routed tokens per step (top-2, pp512) and the most experts per
token (top-8, pp128); and the grid's smallest model (B) at top-2 pp256, which read
1.067-1.076 before the rehearsal (`child.rehearse`). MLX's CPU 4-bit MoE kernels are
slow (0.13 G multiply-adds a second in bf16): with 8 generated tokens and the default
warm-up the first two took about 35 s between them on a quiet machine (top-8 at pp512
alone took a minute), the third about 17 s on this loaded one; the prompt's
multiply-adds are most of it (at top-2 pp512 its attention projections more than its
experts).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.measurement.engine import Engine
from core.measurement.fields import QueueEmulation, TorchFields
from core.measurement.request import MeasureRequest
from core.measurement.result import MeasuredPeak
from core.measurement.run import peak_or_failure
from hip_backend import measure, write_random_model
from tests.hip_backend.moe_sweep_models import MOE_A, MOE_B

pytestmark = [pytest.mark.usefixtures("mlx_available"), pytest.mark.slow]

BAND = (0.95, 1.05)
GEN_TOKENS = WARMUP_TOKENS = 2
"""One decode step in each pass. The band is the prefill's: MLX's peak read the same
to 0.001% with the default warm-up (20 tokens) and 8 generated tokens as with these,
the torch engine's within its run-to-run spread (1.5% on model B: 1.015-1.029 with
those, 1.013-1.028 with these), and the KV cache holds as many 256-slot steps either
way. A decode step of model A on MLX's CPU 4-bit kernels costs about 0.1 s: the
module took 43.5-47.6 s of processor time with those, 37.8-40.6 s with these (paired
runs)."""


@pytest.fixture(scope="module")
def moe_weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One set of random 4-bit weights; each top-k links to it."""
    return write_random_model(tmp_path_factory.mktemp("models") / "moe", MOE_A)


def variant(weights: Path, dest: Path, top_k: int, base: dict[str, Any] | None = None) -> Path:
    """The same weights routing `top_k` experts a token."""
    dest.mkdir()
    (dest / "model.safetensors").hardlink_to(weights / "model.safetensors")
    config = {**(base or MOE_A), "num_experts_per_tok": top_k}
    (dest / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return dest


def peak(folder: Path, engine: Engine, prompt_tokens: int) -> MeasuredPeak:
    request = MeasureRequest(
        str(folder),
        prompt_tokens=prompt_tokens,
        gen_tokens=GEN_TOKENS,
        warmup_tokens=WARMUP_TOKENS,
        device="cpu",
        engine=engine,
        emulate="none" if engine is Engine.TORCH else "auto",
    )
    outcome = peak_or_failure(measure(request, record_history=False))
    assert isinstance(outcome, MeasuredPeak), outcome
    return outcome


@pytest.mark.parametrize(("top_k", "prompt_tokens"), [(2, 512), (8, 128)])
def test_the_torch_engine_holds_what_mlx_holds_on_a_4bit_moe(
    moe_weights: Path, tmp_path: Path, top_k: int, prompt_tokens: int
) -> None:
    folder = variant(moe_weights, tmp_path / f"top{top_k}", top_k)
    ours = peak(folder, Engine.TORCH, prompt_tokens)
    theirs = peak(folder, Engine.MLX, prompt_tokens)
    assert isinstance(ours.fields, TorchFields)
    assert ours.fields.inflight_emulation is QueueEmulation.NONE
    # Both hold the same weights to the byte: what differs is the pass's transients.
    assert ours.weights_bytes == theirs.weights_bytes
    ratio = ours.peak_bytes / theirs.peak_bytes
    assert BAND[0] <= ratio <= BAND[1], (
        f"top-{top_k} pp{prompt_tokens}: torch {ours.peak_bytes:,} B, "
        f"MLX {theirs.peak_bytes:,} B, ratio {ratio:.3f}"
    )


def test_the_torch_engine_holds_what_mlx_holds_on_the_smallest_4bit_moe(
    tmp_path: Path,
) -> None:
    # 1.067-1.076 before the rehearsal (child.rehearse), 1.040 after it. The first
    # load and pass left 1.5-1.7 MB in the torch process that no tensor holds, 8% of
    # these weights; MLX's counter sees buffers only. The rehearsal makes about half
    # of it (code pages, state built on first use) resident before the baseline.
    weights = write_random_model(tmp_path / "small", MOE_B)
    folder = variant(weights, tmp_path / "top2", 2, MOE_B)
    ours = peak(folder, Engine.TORCH, 256)
    theirs = peak(folder, Engine.MLX, 256)
    assert ours.weights_bytes == theirs.weights_bytes
    ratio = ours.peak_bytes / theirs.peak_bytes
    assert BAND[0] <= ratio <= BAND[1], (
        f"hidden 256, 64 experts, top-2 pp256: torch {ours.peak_bytes:,} B, "
        f"MLX {theirs.peak_bytes:,} B, ratio {ratio:.3f}"
    )


TINY_LLAMA: dict[str, Any] = {
    # BF16, unquantized: MLX's CPU runs it in well under a second.
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-5,
    "vocab_size": 256,
    "rope_theta": 10000.0,
    "max_position_embeddings": 512,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}


def test_the_torch_engine_prefills_in_mlx_lms_chunks(tmp_path: Path) -> None:
    # mlx-lm's generate_step evaluates the caches only, in chunks that stop short of
    # the last token, which then runs alone; the engine's chunks must be the same ones
    # (a chunk's size sets its transients), as the prompt callback reports them.
    import mlx.core as mx
    import torch
    from mlx_lm.generate import generate_step
    from mlx_lm.models.cache import make_prompt_cache
    from mlx_lm.utils import load_model

    from hip_backend.torch_engine import (
        InflightQueue,
        LaggingEvent,
        ModelSource,
        build_model,
        resolve_source,
        run_pass,
        synthetic_prompt,
    )

    folder = write_random_model(tmp_path / "tiny", TINY_LLAMA)
    prompt = synthetic_prompt(TINY_LLAMA["vocab_size"], 40, 0)
    theirs: list[int] = []
    model, _ = load_model(folder, lazy=False, strict=True)
    steps = generate_step(
        mx.array(prompt, dtype=mx.uint32),
        model,
        max_tokens=1,
        prompt_cache=make_prompt_cache(model),
        prefill_step_size=16,
        prompt_progress_callback=lambda done, _total: theirs.append(done),
    )
    for _ in steps:
        pass
    ours: list[int] = []

    def progress(phase: str, done: int, _total: int) -> None:
        if phase == "prefill":
            ours.append(done)

    resolved = resolve_source(ModelSource(folder=folder))
    with torch.no_grad():
        engine = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
        queue = InflightQueue(0, LaggingEvent, emulate=False, block_lag=True)
        run_pass(engine, queue, prompt, 1, chunk=16, progress=progress)
    assert theirs == [0, 16, 32, 39, 40]
    assert ours == theirs


def test_a_prefill_chunk_fills_the_caches_as_the_whole_model_does(tmp_path: Path) -> None:
    # The chunk skips what no cache depends on (the last layer's queries, attention
    # and MLP, the head), as MLX's lazy graph does; every layer's keys and values
    # must still be the ones the whole model computes.
    import torch

    from hip_backend.torch_engine import (
        InflightQueue,
        LaggingEvent,
        ModelSource,
        build_model,
        resolve_source,
        synthetic_prompt,
    )

    folder = write_random_model(tmp_path / "tiny", TINY_LLAMA)
    resolved = resolve_source(ModelSource(folder=folder))
    tokens = torch.tensor([synthetic_prompt(TINY_LLAMA["vocab_size"], 24, 0)])
    queue = InflightQueue(0, LaggingEvent, emulate=False, block_lag=True)
    with torch.no_grad():
        engine = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
        whole, chunked = engine.new_cache(queue), engine.new_cache(queue)
        engine.forward(tokens, whole, queue)
        engine.prefill(tokens, chunked, queue)
        queue.sync()
    for full, part in zip(whole, chunked, strict=True):
        assert part.offset == full.offset == 24
        assert part.keys is not None and part.values is not None
        assert full.keys is not None and full.values is not None
        assert torch.equal(part.keys[:, :, :24], full.keys[:, :, :24])
        assert torch.equal(part.values[:, :, :24], full.values[:, :, :24])
