"""The `torch` engine: vramscope's decoder in torch (HIP on ROCm, CUDA, the CPU) under
MLX-ROCm's bounded in-flight queue, with MLX's attention and quantized kernels for the
measured backend. torch is imported inside functions, in the measuring child.

Its API: `measure`, the run inside `python -m hip_backend.child` (hip_backend/engines.py
imports it there); and, for the scripts that time its pieces in-process
(scripts/bench_measure.py, scripts/gpu_check.py), the model it reads and builds, the
pass it runs, the queue it runs under, the device and its memory readings. Nothing
outside hip_backend imports its modules directly.
"""

from __future__ import annotations

from hip_backend.model.bench import synthetic_prompt
from hip_backend.model.source import ModelSource, resolve_source
from hip_backend.torch_engine.child import measure
from hip_backend.torch_engine.device import (
    DeviceInfo,
    event_factory,
    import_torch,
    math_sdpa_scratch_bytes,
    sdpa_backend,
    select_device,
    warm_up_kernels,
)
from hip_backend.torch_engine.gpu_memory import (
    VISIBLE_DEVICE_VARIABLES,
    pick_card,
    read_int_file,
    read_process_drm_memory,
)
from hip_backend.torch_engine.inflight import (
    DEFAULT_OP_CAP,
    InflightQueue,
    LaggingEvent,
    emulates_rocm,
)
from hip_backend.torch_engine.int4_cpu import cpu_capability, cpu_layout
from hip_backend.torch_engine.loader import build_model
from hip_backend.torch_engine.peak import PeakFigures, monitor_for
from hip_backend.torch_engine.weights import kernel_choice
from hip_backend.torch_engine.workload import PassResult, run_pass

__all__ = [
    "DEFAULT_OP_CAP",
    "VISIBLE_DEVICE_VARIABLES",
    "DeviceInfo",
    "InflightQueue",
    "LaggingEvent",
    "ModelSource",
    "PassResult",
    "PeakFigures",
    "build_model",
    "cpu_capability",
    "cpu_layout",
    "emulates_rocm",
    "event_factory",
    "import_torch",
    "kernel_choice",
    "math_sdpa_scratch_bytes",
    "measure",
    "monitor_for",
    "pick_card",
    "read_int_file",
    "read_process_drm_memory",
    "resolve_source",
    "run_pass",
    "sdpa_backend",
    "select_device",
    "synthetic_prompt",
    "warm_up_kernels",
]
