"""The result of a real load, as data: what the UI shows beside the estimate.

It lives in `core/` so that the TUI and the CLI can show a measured peak, and
compare it with the estimate, without importing torch. `hip_backend` produces
these; nothing here measures anything.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, fields
from typing import Any


class FailureKind(enum.Enum):
    """Why a measurement produced no peak."""

    NO_TORCH = "no_torch"
    NO_DEVICE = "no_device"
    OUT_OF_MEMORY = "out_of_memory"
    UNSUPPORTED_MODEL = "unsupported_model"
    BAD_MODEL = "bad_model"
    KILLED = "killed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    INTERNAL = "internal"


@dataclass(frozen=True)
class MeasurementFailure:
    """A typed outcome for a run that did not finish, with a one-line message."""

    kind: FailureKind
    message: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind.value, "message": self.message}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasurementFailure:
        """Inverse of `to_dict`."""
        return cls(FailureKind(data["kind"]), str(data["message"]))


@dataclass(frozen=True)
class MeasuredPeak:
    """One measured run (pp P / tg G) and its memory high-water marks, in bytes."""

    model: str
    device_kind: str
    """`rocm`, `cuda` or `cpu`."""
    device_name: str
    peak_bytes: int
    """The headline peak: torch's allocator peak of live tensors on a GPU (the analogue
    of MLX's peak memory); on the CPU the child's peak RSS over its baseline."""
    peak_kind: str
    """How `peak_bytes` was measured, in words."""
    inflight_mib: int
    """The in-flight budget the run used (0 = bound off)."""
    prompt_tokens: int
    gen_tokens: int
    synthetic_weights: bool
    """True when weights were random tensors of the real shapes (no weights on disk)."""
    load_seconds: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    torch_version: str
    runtime_version: str | None = None
    """HIP or CUDA version of the torch build."""
    arch: str | None = None
    """`gcnArchName` on ROCm (e.g. gfx1151), compute capability on CUDA."""
    reserved_peak_bytes: int | None = None
    device_used_delta_bytes: int | None = None
    """Device-level used-memory rise sampled during the run (sees what the allocator misses)."""
    estimate_bytes: int | None = None
    """The estimate at context P + G for the same settings, when the caller had it."""
    timestamp: str = ""
    vramscope_version: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def context_tokens(self) -> int:
        """The estimate's context for this workload: P + G."""
        return self.prompt_tokens + self.gen_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasuredPeak:
        """Inverse of `to_dict`; unknown keys are ignored, missing optional ones default."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Margin:
    """Estimate against peak."""

    bytes: int
    """estimate - peak (negative when the estimate is under the peak)."""
    percent: float
    """Margin as a percentage of the peak."""

    @property
    def covered(self) -> bool:
        """True when the estimate is at least the peak."""
        return self.bytes >= 0


def margin(estimate_bytes: int, peak_bytes: int) -> Margin:
    """How far an estimate sits above (or below) a measured peak."""
    diff = estimate_bytes - peak_bytes
    return Margin(diff, 100.0 * diff / peak_bytes if peak_bytes else 0.0)
