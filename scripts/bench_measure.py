"""Measurement figures (prints, asserts nothing; tests never time things).

1. Load throughput: the engine loading a model folder onto the CPU (every tensor
   allocated and read into place) against `safetensors.torch.load_file` on the
   same file, both from a warm page cache, best of several runs. Target: at
   least 0.8x load_file.
2. End-to-end time of a CPU measurement of a tiny model through the launcher
   (child start, torch import, load, warm-up, measured pass, result). Target:
   under 10 s.
3. Decode speed: the pp512/tg128 pass of a 4-bit 1024x8 llama (hidden 1024, 8
   layers, vocab 32000) on the CPU, with torch's int4 kernel (`int4_cpu.py`, the
   default for 4-bit CPU modules), the portable no-copy kernel
   (`quant.quantized_matmul`) and the earlier sliced dequantize-then-GEMM path, in
   the same run; then the whole `vramscope measure` of it through the
   launcher (child, load, warm-up, measured pass). Target: the pass in <= 10 s.
4. The end-to-end time of one `--engine mlx` measurement (child start, mlx and
   mlx-lm import, load_model, warm-up, measured pass, result), for the tiny model
   in bf16 and in MLX 4-bit (MLX's CPU 4-bit kernels are far slower than its bf16
   GEMM). Target: under 10 s.

5. Fidelity, like with like: the torch engine with its in-flight emulation off
   (`--emulate none`; MLX's CPU backend has no in-flight queue) against the mlx
   engine on the same model folders and workloads (a bf16 llama and a 4-bit
   qwen3_moe, 1024x8), both peaks and their ratio per shape from the same run
   (`--out FILE.md` keeps the table). The default pp128/tg32 takes about 3 minutes
   here; pp512/tg128 (`--workloads 512/128`) about 13, nearly all of it MLX's CPU
   4-bit MoE kernels.
6. Buffers: one 512-token prefill chunk of the same models in-process, counted by
   each engine's own allocator-level counter (the torch engine's live tensor storages,
   through a dispatch mode; MLX's mx.get_peak_memory), for the whole chunk and per
   attention and MoE block (`--buffers-out FILE.md`; `--offset N` tokens in the cache
   first; `--top-k 2,4,8` adds the sweep's MoEs at those top-k).
7. The MoE sweep (#38; only with `--only moe-sweep`): two small 4-bit qwen3_moe models
   (`MOE_SWEEP_MODELS`) at each top-k and prompt length, like with like as 5 (about 20
   minutes here, nearly all MLX's CPU gather_qmm; docs/benchmark_results/
   moe-topk-sweep-cpu-2026-12-07.md).

    python scripts/bench_measure.py [--runs 5]
        [--only load|e2e|decode|fidelity|buffers|mlx|moe-sweep]
        [--workloads 128/32] [--model NAME] [--out FILE.md]
        [--chunk 512] [--offset 0] [--buffers-out FILE.md]
        [--prompts 128,256,512,1024] [--top-k 2,4,8] [--gen 16]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# The in-process passes wait like the measuring child does (hip_backend/spawn.py: CHILD_THREAD_ENV);
# set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from core.measurement.engine import Engine  # noqa: E402
from core.measurement.fields import QueueEmulation, TorchFields  # noqa: E402
from core.measurement.request import MeasureRequest  # noqa: E402
from core.measurement.result import MeasuredPeak  # noqa: E402
from core.measurement.run import peak_or_failure  # noqa: E402
from hip_backend import measure, write_random_model  # noqa: E402
from tests.hip_backend.moe_sweep_models import MOE_SWEEP_MODELS  # noqa: E402

LOAD_MODEL = {
    # ~0.75 GB of 4-bit words, scales and biases plus a bf16 embedding.
    "model_type": "llama",
    "hidden_size": 1024,
    "num_hidden_layers": 48,
    "intermediate_size": 8192,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-5,
    "vocab_size": 32000,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization": {"group_size": 64, "bits": 4},
}
TINY_MODEL = {
    **LOAD_MODEL,
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "intermediate_size": 512,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 512,
}


def best_seconds(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return min(samples)


def touch_pages(tensors):
    """Read one byte of every 4 KiB page, so lazily mapped data becomes resident."""
    import torch

    return sum(int(t.reshape(-1).view(torch.uint8)[::4096].sum()) for t in tensors)


def engine_tensors(model):
    """Every weight tensor of a DecoderModel."""
    out = [model.norm]
    linears = [model.embed, model.lm_head]
    for block in model.blocks:
        a = block.attention
        linears += [a.q_proj, a.k_proj, a.v_proj, a.o_proj, *vars(block.mlp).values()]
        out += [block.input_norm, block.post_norm]
    for lin in linears:
        if lin is not None:
            out += [t for t in (lin.weight, lin.scales, lin.biases, lin.bias) if t is not None]
            if lin.int4 is not None:
                out.append(lin.int4.scale_zeros)
    return out


def bench_load(tmp: Path, runs: int) -> None:
    import torch
    from safetensors.torch import load_file

    from hip_backend.torch_engine import ModelSource, build_model, kernel_choice, resolve_source

    folder = write_random_model(tmp / "load", LOAD_MODEL)
    path = folder / "model.safetensors"
    resolved = resolve_source(ModelSource(folder=folder))
    size = resolved.plan.total_bytes
    path.read_bytes()  # warm the page cache for both readers
    cpu = torch.device("cpu")

    def ours(int4: bool = False):
        with kernel_choice(int4=int4):
            return build_model(resolved.arch, resolved.plan, cpu)

    figures = {
        "engine, tensors ready": best_seconds(ours, runs),
        "load_file, tensors ready": best_seconds(lambda: load_file(path), runs),
        "engine, every page resident": best_seconds(
            lambda: touch_pages(engine_tensors(ours())), runs
        ),
        "load_file, every page resident": best_seconds(
            lambda: touch_pages(load_file(path).values()), runs
        ),
        "engine + int4 rewrite (default)": best_seconds(lambda: ours(True), max(1, runs // 2)),
    }
    print(
        f"load onto the CPU ({size / 1e9:.2f} GB, {len(resolved.plan.tensors)} tensors, "
        "warm page cache; both map the file lazily; the first three engine rows keep MLX's "
        "layout, the last rewrites 4-bit words for torch's int4 kernel, touching every page)"
    )
    for name, seconds in figures.items():
        print(f"  {name:32s} {size / seconds / 1e9:7.2f} GB/s  ({seconds * 1e3:7.1f} ms)")
    for what in ("tensors ready", "every page resident"):
        ratio = figures[f"load_file, {what}"] / figures[f"engine, {what}"]
        verdict = "OK" if ratio >= 0.8 else "UNDER TARGET"
        print(f"  {what}: {ratio:.2f}x load_file's throughput    target >= 0.8x    {verdict}")
    rewrite = figures["engine + int4 rewrite (default)"] / figures["engine, every page resident"]
    print(f"  the int4 rewrite costs {rewrite:.2f}x the time to make every page resident")


def bench_end_to_end(
    tmp: Path, runs: int, engine: Engine = Engine.TORCH, bf16: bool = False
) -> None:
    config = {k: v for k, v in TINY_MODEL.items() if k != "quantization"} if bf16 else TINY_MODEL
    name = "tiny-bf16" if bf16 else "tiny"
    folder = tmp / name
    if not folder.exists():
        write_random_model(folder, config)
    request = MeasureRequest(
        str(folder),
        prompt_tokens=64,
        gen_tokens=16,
        warmup_tokens=4,
        device="cpu",
        engine=engine,
    )
    samples = []
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = peak_or_failure(measure(request, record_history=False))
        samples.append(time.perf_counter() - start)
    assert isinstance(result, MeasuredPeak), result
    best, worst = min(samples), max(samples)
    form = "bf16" if bf16 else "MLX 4-bit"
    print(
        f"end-to-end CPU measurement, --engine {engine}, of a tiny model in {form} "
        f"(pp64/tg16, warm-up 4 tokens; peak {result.peak_bytes:,} bytes)"
    )
    print(
        f"  best {best:.2f} s, worst {worst:.2f} s over {runs} runs    target < 10 s    "
        f"{'OK' if worst < 10 else 'OVER TARGET'}"
    )
    print(
        f"  of which in the child: load {result.load_seconds:.3f} s, prefill "
        f"{result.prefill_tokens_per_s:.0f} tok/s, decode {result.decode_tokens_per_s:.0f} tok/s"
    )


DECODE_MODEL = {
    **LOAD_MODEL,
    "num_hidden_layers": 8,
    "intermediate_size": 4096,
}


def bench_decode(tmp: Path) -> None:
    import torch

    from hip_backend.torch_engine import (
        InflightQueue,
        LaggingEvent,
        ModelSource,
        build_model,
        cpu_capability,
        cpu_layout,
        kernel_choice,
        resolve_source,
        run_pass,
        synthetic_prompt,
    )

    folder = write_random_model(tmp / "decode", DECODE_MODEL)
    resolved = resolve_source(ModelSource(folder=folder))
    prompt = synthetic_prompt(resolved.arch.vocab_size, 512, 0)
    print(
        "pp512/tg128 of a 4-bit 1024x8 llama on the CPU (in-process pass, budget 1024 MiB, "
        f"{torch.get_num_threads()} torch threads)"
    )
    layout = cpu_layout()
    print(
        f"  torch CPU capability {cpu_capability()}, int4 layout "
        f"{layout.name if layout else 'none proven (portable kernel only)'} "
        "(ATEN_CPU_CAPABILITY=avx2|default runs a lower one)"
    )
    figures = {}
    torch.set_grad_enabled(False)
    kernels = {
        "sliced": ("before #10 (sliced dequantize + GEMM)", "sliced", False),
        "fused": ("portable (quant.quantized_matmul)", "fused", False),
        "int4": ("torch's CPU int4 kernel (int4_cpu)", "fused", True),
    }
    for kernel, (label, few_rows, int4) in kernels.items():
        with kernel_choice(few_rows=few_rows, int4=int4):
            model = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
            queue = InflightQueue(1024 << 20, LaggingEvent)
            start = time.perf_counter()
            result = run_pass(model, queue, prompt, 128)
            total = time.perf_counter() - start
        figures[kernel] = (total, 128 / result.decode_seconds, result.tokens)
        print(
            f"  {label:40s} pass {total:6.2f} s  (prefill {result.prefill_seconds:5.2f} s, "
            f"decode {128 / result.decode_seconds:6.2f} tokens/s)"
        )
        del model
    (old_total, old_rate, old_tokens) = figures["sliced"]
    (new_total, new_rate, new_tokens) = figures["int4"]
    verdict = "OK" if new_total <= 10 else "OVER TARGET"
    same = next(
        (i for i, (a, b) in enumerate(zip(old_tokens, new_tokens, strict=True)) if a != b),
        len(new_tokens),
    )
    print(
        f"  int4 against before: decode {new_rate / old_rate:.2f}x faster, pass "
        f"{old_total / new_total:.2f}x; against the portable kernel: decode "
        f"{new_rate / figures['fused'][1]:.2f}x; the first {same} of {len(new_tokens)} greedy "
        "tokens agree (random weights leave near-ties that either rounding may break; "
        "tests/hip_backend/torch_engine/test_reference_mlx_lm.py checks accuracy); "
        "target pass <= 10 s    "
        f"{verdict}"
    )
    request = MeasureRequest(str(folder), prompt_tokens=512, gen_tokens=128, device="cpu")
    start = time.perf_counter()
    outcome = peak_or_failure(measure(request, record_history=False))
    seconds = time.perf_counter() - start
    if not isinstance(outcome, MeasuredPeak):
        # e.g. ATEN_CPU_CAPABILITY=avx2 on a CPU with AMX: torch's bf16 SDPA (in the
        # child's warm-up) packs for AMX and refuses under the forced lower level.
        print(f"  vramscope measure failed: {outcome}")
        return
    print(
        f"  vramscope measure (child: load, warm-up 20 tokens, pass) {seconds:6.2f} s end to end, "
        f"decode {outcome.decode_tokens_per_s:.2f} tokens/s"
    )


LIFETIME_MODELS = {
    "bf16 1024x8 llama": {k: v for k, v in DECODE_MODEL.items() if k != "quantization"},
    "4-bit qwen3_moe, 32 experts, top-4": {
        "model_type": "qwen3_moe",
        "hidden_size": 1024,
        "num_hidden_layers": 8,
        "intermediate_size": 4096,
        "moe_intermediate_size": 512,
        "num_experts": 32,
        "num_experts_per_tok": 4,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "norm_topk_prob": True,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "head_dim": 64,
        "rms_norm_eps": 1e-6,
        "vocab_size": 32000,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "quantization": {"group_size": 64, "bits": 4},
    },
}


def bench_fidelity(
    tmp: Path, workloads: list[tuple[int, int]], only: str | None = None
) -> list[str]:
    """Like with like: the torch engine with its in-flight emulation off
    (`--emulate none`: nothing held for an emulated queue, MLX's CPU backend has no
    in-flight queue either; on the CPU each op's outputs live until the decoder block
    after theirs ends, as MLX's CPU stream runs behind the host) against the mlx
    engine (mlx-lm's generate_step, mx.get_peak_memory), same model folder, same
    workload, both through the launcher in children of their own, in this run.

    The torch engine's CPU peak is its process's resident-set rise over the load
    (VmHWM), MLX's is its allocator's counter: the table names both. Returns the
    Markdown lines it printed."""
    lines = [
        "| model | workload | torch engine, --emulate none (RSS rise) | MLX (mx.get_peak_memory) "
        "| torch / MLX | torch - MLX | weights, torch / MLX | peak - weights, torch / MLX |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    print(
        "peak against real MLX on the CPU, like with like (warm-up 20 tokens; the torch "
        "engine with --emulate none, MLX-CPU has no in-flight queue, its stream a block "
        "behind; MB = 10^6 bytes)"
    )
    for line in lines:
        print(f"  {line}")
    for name, config in LIFETIME_MODELS.items():
        if only is not None and only not in name:
            continue
        folder = tmp / name.replace(" ", "-").replace(",", "")
        if not folder.exists():
            write_random_model(folder, config)
        for prompt_tokens, gen_tokens in workloads:
            peaks = _measure_pair(folder, prompt_tokens, gen_tokens, {})
            ours, theirs = peaks[Engine.TORCH].peak_bytes, peaks[Engine.MLX].peak_bytes
            held = (peaks[Engine.TORCH].weights_bytes or 0, peaks[Engine.MLX].weights_bytes or 0)
            line = (
                f"| {name} | pp{prompt_tokens}/tg{gen_tokens} | {ours / 1e6:.1f} MB | "
                f"{theirs / 1e6:.1f} MB | {ours / theirs:.3f} | {(ours - theirs) / 1e6:+.1f} MB "
                f"| {held[0] / 1e6:.1f} / {held[1] / 1e6:.1f} MB | {(ours - held[0]) / 1e6:.1f} "
                f"/ {(theirs - held[1]) / 1e6:.1f} MB |"
            )
            lines.append(line)
            print(f"  {line}", flush=True)
    return lines


def moe_variant(tmp: Path, name: str, config: dict, top_k: int) -> Path:
    """The model folder of `name` routing `top_k` experts a token: one set of random
    weights per model (written once), each top-k a folder of its own whose config.json
    sets `num_experts_per_tok` and whose weights file is a hard link to the same one."""
    base = tmp / name.replace(" ", "-").replace(",", "")
    if not base.exists():
        write_random_model(base, config)
    folder = base.with_name(f"{base.name}-top{top_k}")
    if not folder.exists():
        folder.mkdir()
        os.link(base / "model.safetensors", folder / "model.safetensors")
        variant = {**config, "num_experts_per_tok": top_k}
        (folder / "config.json").write_text(json.dumps(variant, indent=4, sort_keys=True))
    return folder


def _measure_pair(
    folder: Path, prompt_tokens: int, gen_tokens: int, seconds: dict[Engine, float]
) -> dict[Engine, MeasuredPeak]:
    """The torch engine (`--emulate none`) and the mlx engine on one shape, each in a
    child of its own through the launcher; each one's wall time goes into `seconds`."""
    peaks: dict[Engine, MeasuredPeak] = {}
    for engine in (Engine.TORCH, Engine.MLX):
        start = time.perf_counter()
        request = MeasureRequest(
            str(folder),
            prompt_tokens=prompt_tokens,
            gen_tokens=gen_tokens,
            device="cpu",
            engine=engine,
            emulate="none" if engine is Engine.TORCH else "auto",
        )
        outcome = peak_or_failure(measure(request, record_history=False))
        assert isinstance(outcome, MeasuredPeak), outcome
        peaks[engine] = outcome
        seconds[engine] = time.perf_counter() - start
    torch_fields = peaks[Engine.TORCH].fields
    assert isinstance(torch_fields, TorchFields)
    assert torch_fields.inflight_emulation is QueueEmulation.NONE, torch_fields
    return peaks


def bench_moe_sweep(
    tmp: Path,
    prompts: list[int],
    top_ks: list[int],
    gen_tokens: int,
    only: str | None = None,
) -> list[str]:
    """#38's grid: every MoE of `MOE_SWEEP_MODELS` at each top-k and prompt length,
    the torch engine with --emulate none against the mlx engine (mx.get_peak_memory),
    like with like, as `bench_fidelity` does. Returns the Markdown lines it printed;
    a ratio outside 0.95-1.05 is marked."""
    lines = [
        "| model | top-k | workload | torch engine (RSS rise) | MLX (mx.get_peak_memory) "
        "| torch / MLX | peak - weights, torch / MLX | seconds, torch / MLX (load average) |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    print(
        f"#38 MoE sweep on the CPU, like with like (load average {os.getloadavg()[0]:.1f} "
        "at the start; MB = 10^6 bytes)"
    )
    for line in lines:
        print(f"  {line}")
    for name, config in MOE_SWEEP_MODELS.items():
        if only is not None and only not in name:
            continue
        for top_k in top_ks:
            folder = moe_variant(tmp, name, config, top_k)
            for prompt_tokens in prompts:
                seconds: dict[Engine, float] = {}
                peaks = _measure_pair(folder, prompt_tokens, gen_tokens, seconds)
                ours, theirs = peaks[Engine.TORCH].peak_bytes, peaks[Engine.MLX].peak_bytes
                held = (
                    peaks[Engine.TORCH].weights_bytes or 0,
                    peaks[Engine.MLX].weights_bytes or 0,
                )
                ratio = ours / theirs
                mark = "" if 0.95 <= ratio <= 1.05 else " **outside**"
                line = (
                    f"| {name} | {top_k} | pp{prompt_tokens}/tg{gen_tokens} | "
                    f"{ours / 1e6:.1f} MB | {theirs / 1e6:.1f} MB | {ratio:.3f}{mark} | "
                    f"{(ours - held[0]) / 1e6:.1f} / {(theirs - held[1]) / 1e6:.1f} MB | "
                    f"{seconds[Engine.TORCH]:.0f} / {seconds[Engine.MLX]:.0f} s "
                    f"(load {os.getloadavg()[0]:.1f}) |"
                )
                lines.append(line)
                print(f"  {line}", flush=True)
    return lines


def _torch_live_bytes(baseline: set[int]):  # -> TorchDispatchMode
    """A dispatch mode counting the bytes of tensor storages alive (torch's CPU
    allocator keeps no statistics): every op's output storage counts once, from the op
    that made it until the last tensor on it dies. Storages in `baseline` (the
    weights) never count. `now`, `peak`: bytes."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class LiveBytes(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.refs: dict[int, list[int]] = {}
            self.now = 0
            self.peak = 0

        def _drop(self, ptr: int) -> None:
            entry = self.refs[ptr]
            entry[1] -= 1
            if entry[1] == 0:
                self.now -= entry[0]
                del self.refs[ptr]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor):
                    continue
                storage = t.untyped_storage()
                ptr, size = storage.data_ptr(), storage.nbytes()
                if ptr == 0 or ptr in baseline:
                    continue
                entry = self.refs.get(ptr)
                if entry is None:
                    entry = self.refs[ptr] = [size, 0]
                    self.now += size
                    self.peak = max(self.peak, self.now)
                entry[1] += 1
                weakref.finalize(t, self._drop, ptr)
            return out

    return LiveBytes()


def _torch_buffers(folder: Path, prompt_tokens: int, offset: int = 0) -> dict[str, int]:
    """The torch engine (`--emulate none`, nothing held for a queue) on one prefill
    chunk of `prompt_tokens` after `offset` tokens already in the cache: the most bytes
    the chunk adds over what was alive before it (the weights and the cache), and the
    most each kind of block adds over what was alive at its start."""
    import torch

    from hip_backend.torch_engine import (
        InflightQueue,
        LaggingEvent,
        ModelSource,
        build_model,
        resolve_source,
        synthetic_prompt,
    )

    torch.set_grad_enabled(False)
    resolved = resolve_source(ModelSource(folder=folder))
    model = build_model(resolved.arch, resolved.plan, torch.device("cpu"))
    # The blocks are timed by wrapping the model's own class and module (scripts reach
    # the engine through its package only).
    DecoderModel = type(model)
    decoder = sys.modules[DecoderModel.__module__]
    model.fuse_all_quantized()  # as the CPU child with no queue emulated
    baseline = {t.untyped_storage().data_ptr() for t in engine_tensors(model)}
    queue = InflightQueue(0, LaggingEvent, emulate=False, block_lag=True)  # as the CPU child
    prompt = synthetic_prompt(resolved.arch.vocab_size, prompt_tokens, 0)
    tokens = torch.tensor([prompt], dtype=torch.long)
    earlier = synthetic_prompt(resolved.arch.vocab_size, offset, 1)
    # A short pass first, as the child's warm-up: the quantized kernel's scratch buffers,
    # kept for the process's life, exist before counting starts.
    model.forward(torch.tensor([prompt[:8]], dtype=torch.long), model.new_cache(queue), queue)
    queue.sync()
    tracker = _torch_live_bytes(baseline)
    figures: dict[str, int] = {}

    def measured(name: str, fn):
        def run(*args, **kwargs):
            before, outer = tracker.now, tracker.peak
            tracker.peak = before
            out = fn(*args, **kwargs)
            figures[name] = max(figures.get(name, 0), tracker.peak - before)
            tracker.peak = max(outer, tracker.peak)
            return out

        return run

    originals = {"_attention": DecoderModel._attention, "_moe": DecoderModel._moe}
    DecoderModel._attention = measured("attention block", DecoderModel._attention)
    DecoderModel._moe = measured("MoE block", DecoderModel._moe)
    dense = decoder.swiglu_mlp
    decoder.swiglu_mlp = measured("MLP block", dense)  # also each routed expert's MLP
    try:
        with tracker:
            cache = model.new_cache(queue)
            if offset:
                model.prefill(torch.tensor([earlier], dtype=torch.long), cache, queue)
                queue.sync()
            figures.clear()
            before = tracker.now
            tracker.peak = before
            model.prefill(tokens, cache, queue)  # the caches only, as generate_step's chunks
            chunk = tracker.peak - before
    finally:
        for name, method in originals.items():
            setattr(DecoderModel, name, method)
        decoder.swiglu_mlp = dense
    figures["whole chunk (over the weights and cache)"] = chunk
    return figures


def _mlx_buffers(folder: Path, prompt_tokens: int, offset: int = 0):  # -> Iterator
    """mlx-lm on the same chunk, each figure as it is measured: the first layer's
    attention and MLP (or MoE) block evaluated alone on a random input (the most each
    adds over what was alive at its start; MLX's CPU 4-bit MoE kernels are slow, so one
    layer, not eight), then mx.get_peak_memory over the weights for the whole chunk,
    evaluated as generate_step does (the caches only: the chunk's logits are never
    computed; the torch engine computes the last position's only)."""
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache
    from mlx_lm.utils import load_model

    from hip_backend.torch_engine import synthetic_prompt

    model, config = load_model(folder, lazy=False, strict=True)
    layer = model.model.layers[0]
    dtype = layer.input_layernorm.weight.dtype
    x = mx.random.normal((1, prompt_tokens, config["hidden_size"])).astype(dtype)
    before_x = mx.random.normal((1, offset, config["hidden_size"])).astype(dtype)
    mx.eval(x, before_x)

    def added(run) -> int:  # bytes the call adds at most over what is alive before it
        mx.clear_cache()
        mx.reset_peak_memory()
        before = mx.get_active_memory()
        out = run()
        mx.eval(out)
        return mx.get_peak_memory() - before

    cache = make_prompt_cache(model)
    if offset:
        mx.eval(layer.self_attn(before_x, mask="causal", cache=cache[0]))
        mx.eval(cache[0].state)
    yield "attention block", added(lambda: layer.self_attn(x, mask="causal", cache=cache[0]))
    name = "MoE block" if config["model_type"] == "qwen3_moe" else "MLP block"
    yield name, added(lambda: layer.mlp(x))
    del cache
    prompt = synthetic_prompt(config["vocab_size"], prompt_tokens, 0)
    tokens = mx.array([prompt], dtype=mx.uint32)
    cache = make_prompt_cache(model)
    if offset:
        earlier = synthetic_prompt(config["vocab_size"], offset, 1)
        model(mx.array([earlier], dtype=mx.uint32), cache=cache)
        mx.eval([c.state for c in cache])
    mx.clear_cache()
    mx.reset_peak_memory()
    before = mx.get_active_memory()
    model(tokens, cache=cache)
    mx.eval([c.state for c in cache])
    yield "whole chunk (over the weights and cache)", mx.get_peak_memory() - before


def bench_buffers(
    tmp: Path,
    prompt_tokens: int,
    only: str | None = None,
    offset: int = 0,
    top_ks: list[int] | None = None,
) -> list[str]:
    """Where the two engines' bytes go on one prefill chunk, counted by each one's own
    allocator-level counter (not the process's resident set): the torch engine with
    --emulate none (its live tensor storages) against mlx-lm (mx.get_peak_memory).
    `offset` tokens are in the cache before the chunk; the sweep's MoEs run at each of
    `top_ks`."""
    models = [
        (name, config, tmp / name.replace(" ", "-").replace(",", ""))
        for name, config in LIFETIME_MODELS.items()
    ]
    for name, config in MOE_SWEEP_MODELS.items():
        for top_k in top_ks or []:
            models.append((f"{name}, top-{top_k}", config, moe_variant(tmp, name, config, top_k)))
    lines = [
        f"| model | what (one {prompt_tokens}-token prefill chunk at offset {offset}) "
        "| torch engine, "
        "--emulate none (live tensor bytes) | MLX (mx.get_peak_memory) | torch / MLX |",
        "|---|---|---:|---:|---:|",
    ]
    print(f"buffers of one {prompt_tokens}-token prefill chunk on the CPU (MB = 10^6 bytes)")
    for line in lines:
        print(f"  {line}")
    for name, config, folder in models:
        if only is not None and only not in name:
            continue
        if not folder.exists():
            write_random_model(folder, config)
        ours = _torch_buffers(folder, prompt_tokens, offset)
        for what, b in _mlx_buffers(folder, prompt_tokens, offset):
            a = ours[what]
            line = f"| {name} | {what} | {a / 1e6:.1f} MB | {b / 1e6:.1f} MB | {a / b:.3f} |"
            lines.append(line)
            print(f"  {line}", flush=True)
    return lines


def parse_workloads(text: str) -> list[tuple[int, int]]:
    """`512/128,128/32` -> [(512, 128), (128, 32)]: P/G pairs."""
    pairs = []
    for item in text.split(","):
        p, _, g = item.partition("/")
        pairs.append((int(p), int(g)))
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--only", choices=("load", "e2e", "decode", "fidelity", "buffers", "mlx", "moe-sweep")
    )
    parser.add_argument(
        "--workloads",
        default="128/32",
        help="P/G pairs of the MLX comparison (default 128/32; 512/128 takes ~13 min here)",
    )
    parser.add_argument("--model", help="only the MLX comparison's models whose name has this")
    parser.add_argument("--out", type=Path, help="write the MLX comparison's table here (Markdown)")
    parser.add_argument("--chunk", type=int, default=512, help="prefill tokens of --only buffers")
    parser.add_argument("--buffers-out", type=Path, help="write the buffers table here")
    parser.add_argument(
        "--prompts", default="128,256,512,1024", help="prompt lengths of --only moe-sweep"
    )
    parser.add_argument(
        "--top-k", help="top-k values of --only moe-sweep (2,4,8) and of --only buffers"
    )
    parser.add_argument(
        "--offset", type=int, default=0, help="tokens in the cache before --only buffers' chunk"
    )
    parser.add_argument("--gen", type=int, default=16, help="decode tokens of --only moe-sweep")
    args = parser.parse_args()
    args.top_k_given = args.top_k is not None
    args.top_k = args.top_k or "2,4,8"
    with tempfile.TemporaryDirectory(prefix="vramscope-bench-measure-") as tmp:
        if args.only in (None, "load"):
            bench_load(Path(tmp), args.runs)
        if args.only in (None, "e2e"):
            bench_end_to_end(Path(tmp), args.runs)
        if args.only in (None, "decode"):
            bench_decode(Path(tmp))
        if args.only in (None, "fidelity"):
            lines = bench_fidelity(Path(tmp), parse_workloads(args.workloads), args.model)
            if args.out is not None:
                args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if args.only in (None, "buffers"):
            top_ks = [int(k) for k in args.top_k.split(",")] if args.top_k_given else []
            lines = bench_buffers(Path(tmp), args.chunk, args.model, args.offset, top_ks)
            if args.buffers_out is not None:
                args.buffers_out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if args.only == "moe-sweep":  # not in the default run: many minutes
            lines = bench_moe_sweep(
                Path(tmp),
                [int(p) for p in args.prompts.split(",")],
                [int(k) for k in args.top_k.split(",")],
                args.gen,
                args.model,
            )
            if args.out is not None:
                args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if args.only in (None, "mlx"):
            bench_end_to_end(Path(tmp), args.runs, engine=Engine.MLX, bf16=True)
            bench_end_to_end(Path(tmp), args.runs, engine=Engine.MLX)
    return 0


if __name__ == "__main__":
    sys.exit(main())
