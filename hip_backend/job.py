"""What the parent hands the measuring child: a resolved, validated request.

The launcher resolves the model name and the in-flight budget (with the
estimate's parser) before the child starts, so the child never reads the
environment for them and a bad name fails fast without importing torch.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from core.measurement.engine import ATTENTION_CHOICES, EMULATE_CHOICES, ENGINE_CHOICES
from core.measurement.request import (
    DEFAULT_GEN_TOKENS,
    DEFAULT_PROMPT_TOKENS,
    DEFAULT_WARMUP_TOKENS,
    check_choice,
)
from hip_backend.torch_engine.inflight import DEFAULT_OP_CAP
from hip_backend.torch_engine.workload import PREFILL_CHUNK


def emulates_rocm(emulate: str, device_kind: str) -> bool:
    """Whether a run on `device_kind` emulates MLX-ROCm's in-flight queue."""
    if emulate == "auto":
        return device_kind in ("rocm", "cpu")
    return emulate == "rocm"


@dataclass(frozen=True)
class ChildJob:
    """One run, as the child receives it on stdin (one JSON object)."""

    display: str
    """The model as the user named it."""
    folder: str | None = None
    profile_id: str | None = None
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS
    gen_tokens: int = DEFAULT_GEN_TOKENS
    warmup_tokens: int = DEFAULT_WARMUP_TOKENS
    inflight_mib: int = 1024
    device: str = "auto"
    synthetic: bool = False
    seed: int = 0
    op_cap: int = DEFAULT_OP_CAP
    prefill_chunk: int = PREFILL_CHUNK
    host_memory_cap_bytes: int | None = None
    emulate: str = "auto"
    """The in-flight queue to emulate: `rocm` (MLX-ROCm's bounded queue), `none`, or
    `auto`: ROCm's on a ROCm device and on the CPU (the CPU run stands in for the
    ROCm machine), none on CUDA (MLX-CUDA has no bound)."""
    fuse_bf16: bool | None = None
    """Model MLX-ROCm's fused BF16-scale kernel (no dequantized copy for modules with
    BF16 scales); None: only when the ROCm queue is emulated on a ROCm device."""
    attention: str = "auto"
    """`mlx-fallback`, `torch-sdpa`, or `auto`: the attention MLX runs on the device
    (hip_backend/torch_engine/attention.py)."""
    engine: str = "torch"
    """`torch` (hip_backend's decoder) or `mlx` (mlx-lm, hip_backend/mlx_engine/child.py)."""
    kv_bits: int | None = None
    """8: mlx-lm's quantized KV cache (mlx engine only); None: 16-bit K/V."""

    def to_json(self) -> str:
        """The stdin payload."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ChildJob:
        """Parse the stdin payload (ValueError on anything malformed)."""
        data: Any = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("the job is not a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown job fields: {', '.join(sorted(unknown))}")
        job = cls(**data)
        if (job.folder is None) == (job.profile_id is None):
            raise ValueError("a job names exactly one of folder and profile_id")
        check_choice("emulate", job.emulate, EMULATE_CHOICES)
        check_choice("attention", job.attention, ATTENTION_CHOICES)
        check_choice("engine", job.engine, ENGINE_CHOICES)
        if job.kv_bits is not None and (job.engine != "mlx" or job.kv_bits not in (4, 8)):
            raise ValueError("a quantized KV cache needs the mlx engine and 4 or 8 bits")
        return job
