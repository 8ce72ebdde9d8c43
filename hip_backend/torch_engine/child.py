"""The torch engine's run inside the measuring child: hip_backend's decoder under the
in-flight queue of the backend it stands for.

Order matters for what the peak counts: kernels are warmed up (tiny shapes for
every op, then a GEMM and the attention calls at the model's real sizes, so
library workspaces exist) before the baseline; the load, a warm-up pass and the
measured pass come after it. The queue emulates MLX-ROCm's bounded in-flight
batches on ROCm and on the CPU (which stands in for the ROCm machine), or when
asked (`emulate="rocm"`); on CUDA, where MLX has no such queue, nothing is held.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from core import __version__
from core.backend import Backend
from core.measurement.fields import QueueEmulation, TorchFields
from core.measurement.protocol import MeasureEvent, MeasureNotice
from core.measurement.result import MeasuredPeak
from hip_backend.job import ChildJob
from hip_backend.torch_engine.inflight import emulates_rocm

if TYPE_CHECKING:
    from hip_backend.model.arch import ArchSpec
    from hip_backend.torch_engine.device import DeviceInfo

Emit = Callable[[MeasureEvent], None]
Progress = Callable[[str, int, int], None]
T = TypeVar("T")
WARM_KEYS = 2048
"""The longest prefill attention (in keys) warmed before the baseline: the 4-bit MoE
grid's prompts (up to 1,024 tokens) whole, a long prompt's first chunks."""
_FUSE_BF16 = {"on": True, "off": False}
"""The request's `fuse_bf16` (`core.measurement.engine.FUSE_BF16`); `auto` decides by
the device and the queue."""


def measure(job: ChildJob, emit: Emit, progress: Progress) -> MeasuredPeak:
    """Run the job; a torch build without kernels for the GPU is `unsupported_device`."""
    from hip_backend.model.source import ModelSource, resolve_source
    from hip_backend.torch_engine.device import import_torch, select_device, unsupported_device
    from hip_backend.torch_engine.loader import plan_modules

    asked = job.request
    source = ModelSource(Path(job.folder) if job.folder else None, job.profile_id)
    resolved = resolve_source(source, force_synthetic=asked.synthetic)
    plan_modules(resolved.arch, resolved.plan)  # a broken folder fails before torch loads
    if resolved.plan.synthetic:
        emit(MeasureNotice(f"synthetic weights: {resolved.plan.reason}"))
    torch = import_torch()
    device, info = select_device(asked.device)
    torch.set_grad_enabled(False)
    try:
        return _run(job, emit, progress, resolved, device, info)
    except RuntimeError as exc:
        typed = unsupported_device(exc, info)
        if typed is not None:
            raise typed from None
        raise


def _run(
    job: ChildJob, emit: Emit, progress: Progress, resolved: Any, device: Any, info: DeviceInfo
) -> MeasuredPeak:
    from hip_backend.host import cap_host_memory
    from hip_backend.model.bench import WARMUP_PROMPT_TOKENS, synthetic_prompt
    from hip_backend.torch_engine.attention import ATTENTION_NOTES, FUSED, attention_kind
    from hip_backend.torch_engine.device import (
        allocator_settings,
        event_factory,
        synchronize,
        warm_up_kernels,
    )
    from hip_backend.torch_engine.inflight import InflightQueue
    from hip_backend.torch_engine.loader import build_model
    from hip_backend.torch_engine.peak import monitor_for
    from hip_backend.torch_engine.workload import attention_shapes, run_pass

    asked = job.request
    if asked.host_memory_cap_bytes is not None:
        if device.type == "cpu":
            cap_host_memory(asked.host_memory_cap_bytes)
        else:  # a GPU runtime reserves address space far beyond any useful cap
            emit(MeasureNotice("the memory cap applies to CPU runs only; ignored on the GPU"))
    where = f" ({info.arch})" if info.arch else ""
    if info.bus_id:
        where += f" at {info.bus_id}"
    emit(MeasureNotice(f"device: {info.kind.value} {info.name}{where}"))
    emulated = emulates_rocm(asked.emulate, info.kind)
    # With no queue emulated, the CPU run models MLX's CPU stream running a block behind
    # the host (inflight.py's docstring).
    block_lag = not emulated and info.kind is Backend.CPU
    if not emulated:
        lag = "; MLX's CPU stream a decoder block behind the host" if block_lag else ""
        emit(
            MeasureNotice(
                "no in-flight queue emulated (MLX has none on "
                f"{info.kind.value.upper()}){lag}; compared with the "
                f"{info.kind.value.upper()} estimate"
            )
        )
    fuse_bf16 = _FUSE_BF16.get(asked.fuse_bf16, emulated and info.kind is Backend.ROCM)
    arch: ArchSpec = resolved.arch
    dtype = getattr(torch_module(), _float_dtype_name(arch))
    chunk = min(job.prefill_chunk, max(1, asked.prompt_tokens))

    warm_up_kernels(device)
    attention = attention_kind(info.kind) if asked.attention == "auto" else asked.attention
    emit(MeasureNotice(f"attention: {ATTENTION_NOTES[attention]}"))
    # The prefill attention shapes of both passes up to WARM_KEYS keys, before the
    # baseline: oneDNN keeps a compiled kernel (about 1.2 MB of resident memory) per
    # batched-matmul shape. Past that the warm-up would cost as much attention as the
    # run itself (an 8,192-token prompt: 2.4 s -> 24 s for a tiny model), while the
    # kernels left in the peak are small beside a long prompt's own scores.
    shapes = attention_shapes(
        min(WARMUP_PROMPT_TOKENS, asked.prompt_tokens), job.prefill_chunk
    ) + attention_shapes(asked.prompt_tokens, job.prefill_chunk)
    shapes = [shape for shape in shapes if shape[1] <= WARM_KEYS]
    sdpa = warm_up_real_shapes(device, arch, dtype, chunk, attention, shapes)
    if info.kind is Backend.CPU:
        rehearse(arch, device, attention, block_lag, job)
    monitor = monitor_for(device, info.kind, info.total_bytes, info.bus_id, info.index)
    monitor.start()
    started = time.perf_counter()
    model = build_model(
        arch,
        resolved.plan,
        device,
        progress=lambda done, total: progress("load", done, total),
        seed=job.seed,
    )
    synchronize(device)
    load_seconds = time.perf_counter() - started
    fused_modules = model.fuse_bf16_scales() if fuse_bf16 else 0
    if block_lag and model.fuse_all_quantized():
        emit(MeasureNotice("quantized matmuls without a dequantized weight copy, as MLX's CPU"))
    model.attention = attention

    queue = InflightQueue(
        job.inflight_mib << 20, event_factory(device), emulate=emulated, block_lag=block_lag
    )
    vocab = arch.vocab_size
    warm_prompt = synthetic_prompt(
        vocab, min(WARMUP_PROMPT_TOKENS, asked.prompt_tokens), job.seed + 1
    )
    run_pass(
        model,
        queue,
        warm_prompt,
        asked.warmup_tokens,
        phase="warmup ",
        progress=progress,
        chunk=job.prefill_chunk,
    )
    measured = run_pass(
        model,
        queue,
        synthetic_prompt(vocab, asked.prompt_tokens, job.seed),
        asked.gen_tokens,
        progress=progress,
        chunk=job.prefill_chunk,
    )
    figures = monitor.stop()
    prefill_rate = (
        asked.prompt_tokens / measured.prefill_seconds if measured.prefill_seconds else 0.0
    )
    decode_rate = asked.gen_tokens / measured.decode_seconds if measured.decode_seconds else 0.0
    readings = figures.extra
    fields = TorchFields(
        inflight_emulation=QueueEmulation.ROCM if emulated else QueueEmulation.NONE,
        inflight_commits=queue.stats.commits,
        inflight_waits=queue.stats.waits,
        inflight_max_committed_bytes=queue.stats.max_committed_bytes,
        inflight_max_held_bytes=queue.stats.max_held_bytes,
        ops=queue.stats.ops,
        fused_bf16_modules=fused_modules,
        attention=model.attention,
        sdpa_backend=sdpa if model.attention == FUSED else {},
        generated_tokens=measured.tokens[:16],
        drm_vram_delta_bytes=_reading(readings, "drm_vram_delta_bytes", int),
        drm_gtt_delta_bytes=_reading(readings, "drm_gtt_delta_bytes", int),
        pci_bus_id=_reading(readings, "pci_bus_id", str),
        allocator_settings=allocator_settings(dict(os.environ)) or None,
    )
    return MeasuredPeak(
        model=asked.model,
        device_kind=info.kind,
        device_name=info.name,
        peak_bytes=figures.peak_bytes,
        peak_kind=figures.peak_kind,
        inflight_mib=job.inflight_mib if emulated else 0,
        prompt_tokens=asked.prompt_tokens,
        gen_tokens=asked.gen_tokens,
        synthetic_weights=resolved.plan.synthetic,
        load_seconds=round(load_seconds, 4),
        prefill_tokens_per_s=round(prefill_rate, 2),
        decode_tokens_per_s=round(decode_rate, 2),
        torch_version=info.torch_version,
        runtime_version=info.runtime_version,
        arch=info.arch,
        reserved_peak_bytes=figures.reserved_peak_bytes,
        device_used_delta_bytes=figures.device_used_delta_bytes,
        timestamp=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        vramscope_version=__version__,
        extra=fields.to_extra(),
        warmup_tokens=asked.warmup_tokens,
        weights_bytes=model.weights_bytes,
        device_used_source=figures.device_used_source,
        family=arch.family,
    )


REHEARSAL_PROMPT = 8
REHEARSAL_TOKENS = 2
"""The rehearsal's pass: prefill and decode both run, each over a few tokens."""


def rehearse(arch: ArchSpec, device: Any, attention: str, block_lag: bool, job: ChildJob) -> None:
    """Load a tiny model of `arch`'s structure (`loader.rehearsal_arch`), run a short
    pass over it as the run will, free it, and give the heap it leaves free back to the
    kernel, before the CPU baseline.

    On the CPU the peak is the process's resident set, which also counts what a first
    load and a first pass leave behind that no tensor holds: code pages of torch and
    the engine they touch first, and state built lazily on first use. MLX's counter
    (buffers only) sees none of it. The rehearsal makes those resident before the
    baseline. What the real model allocates still counts in full: its tensors, and its
    own Python objects (one per module, as the rehearsal's were), because the freed
    heap is trimmed (`malloc_trim`) rather than left for them to reuse."""
    import gc

    from hip_backend.model.bench import synthetic_prompt
    from hip_backend.torch_engine.device import event_factory
    from hip_backend.torch_engine.inflight import InflightQueue
    from hip_backend.torch_engine.loader import REHEARSAL_VOCAB, build_rehearsal
    from hip_backend.torch_engine.workload import run_pass

    model = build_rehearsal(arch, device, seed=job.seed)
    if block_lag:
        model.fuse_all_quantized()
    model.attention = attention
    queue = InflightQueue(0, event_factory(device), emulate=False, block_lag=block_lag)
    prompt = synthetic_prompt(REHEARSAL_VOCAB, REHEARSAL_PROMPT, job.seed + 2)
    run_pass(model, queue, prompt, REHEARSAL_TOKENS, chunk=job.prefill_chunk)
    del model, queue
    gc.collect()
    trim_heap()


def trim_heap() -> bool:
    """Return the C heap's free pages to the kernel (glibc's `malloc_trim(0)`, which
    also releases free pages inside the heap); False where the C library has none."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
    return True


def _reading(readings: Mapping[str, int | str], key: str, kind: type[T]) -> T | None:
    """One of the peak monitor's further readings, when it took it."""
    value = readings.get(key)
    return value if isinstance(value, kind) else None


def torch_module() -> Any:
    """torch (imported by now)."""
    import torch

    return torch


def _float_dtype_name(arch: ArchSpec) -> str:
    return {"F16": "float16", "F32": "float32"}.get(arch.float_dtype, "bfloat16")


def warm_up_real_shapes(
    device: Any,
    arch: ArchSpec,
    dtype: Any,
    chunk: int,
    attention: str,
    prefill: list[tuple[int, int]] | None = None,
) -> dict[str, str]:
    """The GEMM and attention calls at the model's sizes before the baseline; returns
    the SDPA kernel torch picks for a first chunk, a masked later chunk and a decode
    step (`math` would add a [heads x L x S] score matrix per layer to the peak).
    With MLX's fallback attention (`attention.py`) its batched GEMMs run instead, at
    each `(queries, keys)` of `prefill` too (the workload's chunks: on the CPU each new
    shape leaves oneDNN's compiled kernel resident, memory MLX's counter never sees)."""
    import torch

    from hip_backend.torch_engine.attention import MLX_FALLBACK, mlx_fallback_attention
    from hip_backend.torch_engine.device import event_factory, sdpa_backend, warm_up_shapes
    from hip_backend.torch_engine.inflight import InflightQueue

    moe = arch.moe
    widest = max(arch.intermediate_size, moe.intermediate_size if moe is not None else 0)
    warm_up_shapes(
        device,
        hidden=arch.hidden_size,
        widest=max(1, widest),
        heads=arch.num_heads,
        kv_heads=arch.num_kv_heads,
        head_dim=arch.head_dim,
        chunk=chunk,
        dtype=dtype,
    )
    q = torch.zeros(1, arch.num_heads, chunk, arch.head_dim, device=device, dtype=dtype)
    k = torch.zeros(1, arch.num_kv_heads, 2 * chunk, arch.head_dim, device=device, dtype=dtype)
    mask = torch.ones(chunk, 2 * chunk, dtype=torch.bool, device=device).tril(chunk)
    if attention == MLX_FALLBACK:
        queue = InflightQueue(0, event_factory(device), emulate=False)
        mlx_fallback_attention(q, k, k, mask, 1.0, queue)
        mlx_fallback_attention(q[:, :, -1:], k, k, None, 1.0, queue)
        for length, total in sorted(set(prefill or [])):
            shape = (1, arch.num_heads, length, arch.head_dim)
            keys = (1, arch.num_kv_heads, total, arch.head_dim)
            mlx_fallback_attention(
                torch.zeros(shape, device=device, dtype=dtype),
                torch.zeros(keys, device=device, dtype=dtype),
                torch.zeros(keys, device=device, dtype=dtype),
                torch.ones(length, total, dtype=torch.bool, device=device),
                1.0,
                queue,
            )
    return {
        "first_chunk": sdpa_backend(q, k[:, :, :chunk], causal=True, mask=None),
        "later_chunk": sdpa_backend(q, k, causal=False, mask=mask),
        "decode": sdpa_backend(q[:, :, -1:], k, causal=False, mask=None),
    }
