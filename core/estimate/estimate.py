"""The estimate: weights + KV + allocator overhead + activation + backend in-flight.

    total = W + K + O + A + I            (saturating u64)
    O     = trunc((W + K) * (factor - 1))
    I     = in-flight budget on ROCm, 0 on every other backend

Pure: takes a `ModelSnapshot` and explicit settings; reads no files, no
environment and no GPU runtime.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from core.backend import Backend
from core.estimate.activation import ACTIVATION_BUFFER_MULT, compute_activation_bytes
from core.estimate.available import AvailableMemory
from core.estimate.headroom import (
    DEFAULT_HEADROOM_FACTOR,
    compute_runtime_headroom,
    headroom_overflow_warning,
)
from core.estimate.inflight import ROCM_DEFAULT_MAX_INFLIGHT_MB
from core.estimate.kv_cache import KvArch, KvTerm, kv_term
from core.estimate.snapshot import ModelSnapshot
from core.estimate.weights import WeightsSource
from core.kind import Kind
from core.model.config import ActivationDims
from core.units import MIB, sat_add, sat_sub

DEFAULT_CTX_LEN = 8192


class QuantHint(enum.Enum):
    """`--quant`: a label only; it never changes the byte total."""

    DEFAULT = ("default", "default (from config.json)")
    FP16 = ("fp16", "fp16")
    INT8 = ("int8", "int8")
    INT4 = ("int4", "int4")

    @property
    def json_label(self) -> str:
        """`inputs.quant` in the JSON report."""
        return self.value[0]

    @property
    def text_label(self) -> str:
        """The banner's `Quant hint:` value."""
        return self.value[1]


_QUANT_ALIASES = {
    "default": QuantHint.DEFAULT,
    "": QuantHint.DEFAULT,
    "fp16": QuantHint.FP16,
    "float16": QuantHint.FP16,
    "int8": QuantHint.INT8,
    "i8": QuantHint.INT8,
    "int4": QuantHint.INT4,
    "i4": QuantHint.INT4,
}


def parse_quant_hint(text: str) -> QuantHint:
    """mlxcel's `parse_quant_hint` (case-insensitive aliases); ValueError otherwise."""
    hint = _QUANT_ALIASES.get(text.strip().lower())
    if hint is None:
        raise ValueError(
            f"--quant: unknown value '{text}'; expected one of default, fp16, int8, int4"
        )
    return hint


class KvCacheMode(Kind):
    """The KV cache's dtype (its value is mlxcel's word: `--kv-cache-mode`, the JSON)."""

    FP16 = "fp16"
    INT8 = "int8"

    @classmethod
    def of(cls, kv_int8: bool) -> KvCacheMode:
        """The mode of a workload's `kv_int8`."""
        return cls.INT8 if kv_int8 else cls.FP16

    @property
    def int8(self) -> bool:
        """The 8-bit cache (`Workload.kv_int8`)."""
        return self is KvCacheMode.INT8


@dataclass(frozen=True)
class Workload:
    """What the model will be asked to hold."""

    max_tokens: int = DEFAULT_CTX_LEN
    """Context length in tokens (prompt + generated), unrounded."""
    batch: int = 1
    kv_int8: bool = False
    quant: QuantHint = QuantHint.DEFAULT

    @property
    def kv_cache_mode(self) -> KvCacheMode:
        """`fp16` or `int8`, as the banner and JSON show it."""
        return KvCacheMode.of(self.kv_int8)


@dataclass(frozen=True)
class EstimateSettings:
    """The environment-derived knobs, resolved beforehand so the estimate stays pure."""

    backend: Backend
    available: AvailableMemory
    headroom_factor: float = DEFAULT_HEADROOM_FACTOR
    activation_mult: float = ACTIVATION_BUFFER_MULT
    inflight_mib: int = ROCM_DEFAULT_MAX_INFLIGHT_MB
    """`MLX_ROCM_MAX_INFLIGHT_MB` after parsing; used only when the backend is ROCm."""

    @property
    def backend_inflight_bytes(self) -> int:
        """The in-flight term: the budget on ROCm, 0 elsewhere whatever the setting."""
        return self.inflight_mib * MIB if self.backend.has_inflight_reserve else 0


@dataclass(frozen=True)
class MemoryEstimate:
    """Every term in bytes, and the verdict."""

    weights_bytes: int
    weights_source: WeightsSource
    kv: KvTerm
    activation_bytes: int
    allocator_overhead_bytes: int
    """O: the factor term alone."""
    backend_inflight_bytes: int
    runtime_headroom_bytes: int
    """O + A + I (the JSON `headroom_bytes`)."""
    total_bytes: int
    available_bytes: int
    headroom_factor: float
    workload: Workload

    @property
    def kv_bytes(self) -> int:
        """K."""
        return self.kv.bytes

    @property
    def shown_overhead_bytes(self) -> int:
        """The banner's `Allocator ovhd:` and the JSON `allocator_overhead_bytes`:
        `headroom_bytes` - A - I, as mlxcel prints it (O, unless O + A + I saturated)."""
        return sat_sub(
            sat_sub(self.runtime_headroom_bytes, self.activation_bytes),
            self.backend_inflight_bytes,
        )

    @property
    def fits(self) -> bool:
        """`total <= available`."""
        return self.total_bytes <= self.available_bytes

    @property
    def slack_bytes(self) -> int:
        """Headroom left when it fits, else 0."""
        return sat_sub(self.available_bytes, self.total_bytes)

    @property
    def overflow_bytes(self) -> int:
        """Bytes over the budget when it does not fit, else 0."""
        return sat_sub(self.total_bytes, self.available_bytes)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Lines due about the figures themselves (mlxcel's numbers are kept)."""
        line = headroom_overflow_warning(
            sat_add(self.weights_bytes, self.kv_bytes), self.headroom_factor
        )
        return (line,) if line else ()


def estimate(
    model: ModelSnapshot, workload: Workload, settings: EstimateSettings
) -> MemoryEstimate:
    """mlxcel's `estimate_total_memory` over an already-read model."""
    return estimate_of(
        model.weights.bytes,
        model.weights.source,
        model.kv_arch,
        model.activation_dims,
        workload,
        settings,
        settings.available.bytes,
    )


def estimate_of(
    weights: int,
    source: WeightsSource,
    arch: KvArch | None,
    dims: ActivationDims | None,
    workload: Workload,
    settings: EstimateSettings,
    available: int,
) -> MemoryEstimate:
    """The terms over given weights, KV layout and activation shapes: the whole model
    (`estimate`) or one rank's share of it (`core.parallel.plan`)."""
    w = weights
    kv = kv_term(arch, workload.max_tokens, workload.kv_int8, workload.batch)
    overhead = compute_runtime_headroom(sat_add(w, kv.bytes), settings.headroom_factor)
    activation = compute_activation_bytes(
        dims, workload.max_tokens, workload.batch, settings.activation_mult
    )
    inflight = settings.backend_inflight_bytes  # on ROCm, one budget per device
    runtime_headroom = sat_add(overhead, activation, inflight)
    return MemoryEstimate(
        weights_bytes=w,
        weights_source=source,
        kv=kv,
        activation_bytes=activation,
        allocator_overhead_bytes=overhead,
        backend_inflight_bytes=inflight,
        runtime_headroom_bytes=runtime_headroom,
        total_bytes=sat_add(w, kv.bytes, runtime_headroom),
        available_bytes=available,
        headroom_factor=settings.headroom_factor,
        workload=workload,
    )


def kv_bytes_per_token(model: ModelSnapshot, int8: bool, batch: int = 1) -> int | None:
    """Marginal KV bytes per token, or None when the architecture is unavailable."""
    term = kv_term(model.kv_arch, 1, int8, batch)
    return term.per_token_bytes if term.available else None
