"""The result of a real load, as data: what the UI shows beside the estimate.

It lives in `core/` so that the TUI and the CLI can compare a peak with the estimate
without importing torch. `hip_backend` produces these; nothing here measures anything.
"""

from __future__ import annotations

import enum
import json
import math
import signal
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from core.backend import Backend
from core.estimate.estimate import KvCacheMode
from core.measurement.comparison import Margin, held_against, margin
from core.measurement.engine import ATTENTION, DEFAULT_ENGINE, ENGINE_NAMES, Engine
from core.measurement.fields import ExternalFields, RankFields, RunFields, TorchFields
from core.measurement.request import DEFAULT_WARMUP_TOKENS


class FailureKind(enum.Enum):
    """Why a measurement produced no peak."""

    NO_TORCH = "no_torch"
    NO_MLX = "no_mlx"
    ENGINE_FAILED_TO_LOAD = "engine_failed_to_load"
    NO_DEVICE = "no_device"
    UNSUPPORTED_DEVICE = "unsupported_device"
    OUT_OF_MEMORY = "out_of_memory"
    UNSUPPORTED_MODEL = "unsupported_model"
    BAD_MODEL = "bad_model"
    KILLED = "killed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    INTERNAL = "internal"
    CANNOT_START = "cannot_start"
    NOT_MEASURED = "not_measured"

    @property
    def label(self) -> str:
        """Short words for a status line."""
        return _FAILURE_LABELS[self]


_FAILURE_LABELS = {
    FailureKind.NO_TORCH: "torch is not installed",
    FailureKind.NO_MLX: "mlx is not installed",
    FailureKind.ENGINE_FAILED_TO_LOAD: "engine installed but failed to load",
    FailureKind.NO_DEVICE: "no such device",
    FailureKind.UNSUPPORTED_DEVICE: "no kernels for this GPU",
    FailureKind.OUT_OF_MEMORY: "out of memory",
    FailureKind.UNSUPPORTED_MODEL: "not supported for measurement",
    FailureKind.BAD_MODEL: "unusable model files",
    FailureKind.KILLED: "measuring process killed",
    FailureKind.CANCELLED: "cancelled",
    FailureKind.TIMEOUT: "timed out",
    FailureKind.INTERNAL: "internal error",
    FailureKind.CANNOT_START: "the command could not start",
    FailureKind.NOT_MEASURED: "not measured",
}


@dataclass(frozen=True)
class MeasurementFailure:
    """A typed outcome for a run that did not finish, with a one-line message."""

    kind: FailureKind
    message: str
    exit_status: int | None = None
    """The status of the user's command (`vramscope run`), when it ran to an end:
    its exit code, 128 + N for signal N. None for an engine's child."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (`exit_status` only where there is one)."""
        out: dict[str, Any] = {"kind": self.kind.value, "message": self.message}
        if self.exit_status is not None:
            out["exit_status"] = self.exit_status
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasurementFailure:
        """Inverse of `to_dict`."""
        status = data.get("exit_status")
        return cls(
            FailureKind(data["kind"]),
            str(data["message"]),
            status if isinstance(status, int) and not isinstance(status, bool) else None,
        )


@dataclass(frozen=True)
class UnmeasuredRun:
    """A `vramscope run` whose command ended before anything of it was read (no sample,
    and no ru_maxrss above the holder's own): what the history records of it, with its
    peak "not measured", no figure (#41). Never fitted, never covered: it has no peak."""

    model: str
    command: str
    context_tokens: int
    inflight_mib: int
    estimate_bytes: int | None
    failure: MeasurementFailure
    """Why it was not measured (`FailureKind.NOT_MEASURED`) and the command's status."""
    timestamp: str
    vramscope_version: str
    engine: Engine = Engine.EXTERNAL

    def to_dict(self) -> dict[str, Any]:
        """The history record's `result` (`"peak_bytes": null`: no figure)."""
        return {
            "model": self.model,
            "engine": self.engine.value,
            "command": self.command,
            "context_tokens": self.context_tokens,
            "inflight_mib": self.inflight_mib,
            "estimate_bytes": self.estimate_bytes,
            "peak_bytes": None,
            "failure": self.failure.to_dict(),
            "timestamp": self.timestamp,
            "vramscope_version": self.vramscope_version,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UnmeasuredRun:
        """Inverse of `to_dict` (ValueError, KeyError or TypeError when damaged)."""
        failure = data["failure"]
        if not isinstance(failure, dict):
            raise TypeError("failure is not an object")
        texts = ("model", "command", "timestamp", "vramscope_version")
        counts = ("context_tokens", "inflight_mib")
        estimate = data.get("estimate_bytes")
        if (
            not all(isinstance(data.get(k), str) for k in texts)
            or not all(_type_ok(data.get(k), "int") and data[k] >= 0 for k in counts)
            or not (estimate is None or _type_ok(estimate, "int"))
            or data.get("peak_bytes") is not None
        ):
            raise ValueError("not a not-measured run")
        return cls(
            model=data["model"],
            command=data["command"],
            context_tokens=data["context_tokens"],
            inflight_mib=data["inflight_mib"],
            estimate_bytes=estimate,
            failure=MeasurementFailure.from_dict(failure),
            timestamp=data["timestamp"],
            vramscope_version=data["vramscope_version"],
            engine=Engine.named(data.get("engine")),
        )


@dataclass(frozen=True)
class MeasuredPeak:
    """One measured run (pp P / tg G) and its memory high-water marks, in bytes."""

    model: str
    device_kind: Backend
    """The kind of device it ran on (ROCm, CUDA, the CPU; Metal for MLX on a Mac); a
    name is taken too, and the JSON writes the name."""
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
    """The engine's own fields as written (`fields` reads them typed)."""
    warmup_tokens: int = DEFAULT_WARMUP_TOKENS
    """Decode tokens of the warm-up pass that ran before the measured pass."""
    weights_bytes: int | None = None
    """Bytes of weight tensors held on the device after the load."""
    device_used_source: str | None = None
    """Where `device_used_delta_bytes` came from (sysfs, amdsmi, cudaMemGetInfo)."""
    family: str | None = None
    """The decoder family the engine ran (`llama`, `qwen3_moe`, ...)."""
    engine: Engine = DEFAULT_ENGINE
    """Which engine produced the peak (a name is taken too). Records written before
    engines existed are torch's."""
    mlx_version: str | None = None
    """`mlx.core.__version__` of an mlx run."""
    mlx_lm_version: str | None = None
    """`mlx_lm.__version__` of an mlx run."""
    active_bytes: int | None = None
    """mx.get_active_memory() at the end of an mlx run (weights and anything still held)."""
    cache_bytes: int | None = None
    """mx.get_cache_memory() at the end of an mlx run (freed buffers MLX keeps for reuse)."""
    kv_cache_mode: KvCacheMode = KvCacheMode.FP16
    """`fp16`, or `int8` (mlx-lm's 8-bit quantized KV cache; mlx engine only); a name
    is taken too, and the JSON writes the name."""
    active_plus_cache_peak_bytes: int | None = None
    """The largest mx.get_active_memory() + mx.get_cache_memory() of an mlx run, sampled
    after the load, every prefill chunk and every token: what MLX held from the system,
    freed-buffer cache included (hip_backend/mlx_engine/footprint.py). None in records
    from before it was recorded."""
    os_peak_bytes: int | None = None
    """The process's own peak as the OS counts it (`os_peak_source` says how: VmHWM on
    the CPU, the process's amdgpu memory on ROCm); None where the device has none."""
    os_peak_source: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "engine", Engine.named(self.engine))
        object.__setattr__(self, "device_kind", Backend.named(self.device_kind, "device_kind"))
        object.__setattr__(
            self, "kv_cache_mode", KvCacheMode.named(self.kv_cache_mode, "kv_cache_mode")
        )

    @property
    def engine_label(self) -> str:
        """Which engine, in words, for a table cell or a status line."""
        return self.engine.label

    @property
    def fields(self) -> RunFields:
        """The engine's own fields (`extra`), typed: a rank's when the run was one."""
        if self.engine is Engine.MLX and RankFields.KEY in self.extra:
            return RankFields.from_extra(self.extra)
        return self.engine.spec.fields.from_extra(self.extra)

    @property
    def emulated_queue(self) -> bool:
        """True for a torch run that emulated MLX-ROCm's in-flight queue (ROCm, the CPU,
        or `--emulate rocm`; records from before the choice existed always did)."""
        fields = self.fields
        return isinstance(fields, TorchFields) and fields.emulated_queue

    @property
    def attention_label(self) -> str | None:
        """The attention a torch run ran, in words; None for an mlx run (MLX ran its own)
        and for records from before the choice existed."""
        fields = self.fields
        kind = fields.attention if isinstance(fields, TorchFields) else None
        return ATTENTION.labels.get(kind, kind) if kind else None

    @property
    def missing_queue(self) -> str | None:
        """Why the run had no in-flight queue ("no in-flight queue (MLX on cpu)"), or
        None when it had one (its budget is `inflight_mib`, 0 with the bound off)."""
        if self.engine is Engine.MLX and not self.device_kind.has_inflight_reserve:
            return f"no in-flight queue (MLX on {self.device_kind.value})"
        if self.engine is Engine.TORCH and not self.emulated_queue:
            return f"no in-flight queue emulated (torch on {self.device_kind.value})"
        if self.engine is Engine.EXTERNAL and not self.device_kind.has_inflight_reserve:
            return f"no in-flight queue (your command on {self.device_kind.value})"
        return None

    @property
    def budget_words(self) -> str:
        """The in-flight budget: `1024 MiB`, or `0 (bound off)`."""
        return f"{self.inflight_mib} MiB" if self.inflight_mib else "0 (bound off)"

    @property
    def estimate_backend(self) -> Backend:
        """The backend whose formula this peak is held against
        (`core.measurement.comparison.held_against`)."""
        return held_against(self.engine, self.device_kind, emulated_queue=self.emulated_queue)

    @property
    def counted(self) -> str:
        """The engine and what its peak counts, in one phrase: "MLX peak
        (mx.get_peak_memory), cpu" or "torch engine, RSS over baseline, emulating
        MLX-ROCm's in-flight queue"."""
        if self.engine is not Engine.TORCH:
            return self.peak_kind
        what = "RSS over baseline" if self.device_kind is Backend.CPU else "allocator peak"
        queue = (
            "emulating MLX-ROCm's in-flight queue" if self.emulated_queue else "no in-flight queue"
        )
        return f"{self.engine.label}, {what}, {queue}"

    @property
    def context_tokens(self) -> int:
        """The estimate's context for this workload: P + G."""
        return self.prompt_tokens + self.gen_tokens

    @property
    def exit_status(self) -> int | None:
        """The user's command's exit status (`vramscope run`); None for an engine's run,
        which reports a peak only when it finished."""
        fields = self.fields
        return fields.exit_status if isinstance(fields, ExternalFields) else None

    @property
    def failed_status(self) -> str | None:
        """How a run that did not end well ended ("exit status 137 (SIGKILL)"), or None
        when it did: such a run is never covered, nor fitted by default."""
        fields = self.fields
        if not isinstance(fields, ExternalFields) or fields.completed:
            return None
        return status_words(fields.exit_status, fields.exit_signal)

    @property
    def covered(self) -> bool | None:
        """Whether the estimate covers this peak: None when it is not known, False for a
        run that did not end well (`failed_status`), whatever its margin."""
        m = self.margin
        if m is None:
            return None
        return m.covered and self.failed_status is None

    @property
    def margin(self) -> Margin | None:
        """Estimate against this peak, when the estimate is known."""
        if self.estimate_bytes is None:
            return None
        return margin(self.estimate_bytes, self.peak_bytes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the history record's `result`, the child's result line)."""
        return asdict(self) | {
            "engine": self.engine.value,
            "device_kind": self.device_kind.value,
            "kv_cache_mode": self.kv_cache_mode.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasuredPeak:
        """Inverse of `to_dict`; unknown keys are ignored, missing optional ones default."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def status_words(status: int | None, signum: int | None = None) -> str:
    """`exit status 1`, `exit status 137 (SIGKILL)`: a command's end, in words."""
    return f"exit status {status}" + (f" ({_signal_name(signum)})" if signum is not None else "")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


# -- a peak from untrusted JSON (history lines, the child's result line) --------------


_NON_NEGATIVE = frozenset(
    {"peak_bytes", "prompt_tokens", "gen_tokens", "warmup_tokens", "inflight_mib"}
)


_CHECKED_TYPES = frozenset({"bool", "int", "float", "str", "None"})
_AS_JSON = {"Engine": "str", "Backend": "str", "KvCacheMode": "str"}
"""Field types written as a JSON type (an Engine, a Backend as its name)."""
_NAMES = {
    "Engine": ENGINE_NAMES,
    "Backend": tuple(b.value for b in Backend),
    "KvCacheMode": tuple(m.value for m in KvCacheMode),
}
"""The names a field of an enum type may hold."""


def _type_ok(value: Any, hint: str) -> bool:
    """Whether a JSON value fits a MeasuredPeak field annotation (as written in source)."""
    options = [h.strip() for h in hint.split("|")]
    if any(o not in _CHECKED_TYPES and not o.startswith("dict") for o in options):
        return True  # a field type this check does not know: leave it to the dataclass
    if value is None:
        return "None" in options
    for option in options:
        if option == "bool" and isinstance(value, bool):
            return True
        if option == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if (
            option == "float"
            and isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
        ):
            return True
        if option == "str" and isinstance(value, str):
            return True
        if option.startswith("dict") and isinstance(value, dict):
            return True
    return False


def checked_peak(result: dict[str, Any]) -> MeasuredPeak:
    """A MeasuredPeak from a record's `result`, every field checked against its type.

    Raises TypeError naming the first field that is missing or of the wrong type,
    so a damaged or hand-edited record is skipped instead of crashing a screen.
    """
    for f in fields(MeasuredPeak):
        if f.name not in result:
            if f.default is MISSING and f.default_factory is MISSING:
                raise TypeError(f"'{f.name}' is missing")
            continue
        value = result[f.name]
        hint = _AS_JSON.get(str(f.type), str(f.type))
        if not _type_ok(value, hint):
            raise TypeError(f"'{f.name}' is {json.dumps(value)[:40]}, not {hint}")
        names = _NAMES.get(str(f.type))
        if names is not None and value not in names:
            raise TypeError(
                f"'{f.name}' is {json.dumps(value)[:40]}, not one of {', '.join(names)}"
            )
        if f.name in _NON_NEGATIVE and value < 0:
            raise TypeError(f"'{f.name}' is negative")
    return MeasuredPeak.from_dict(result)
