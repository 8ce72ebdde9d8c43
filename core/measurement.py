"""The result of a real load, as data: what the UI shows beside the estimate.

It lives in `core/` so that the TUI and the CLI can ask for a measurement, follow
its progress and compare its peak with the estimate without importing torch.
`hip_backend` produces these; nothing here measures anything.

A measurement runs in a child process that writes one JSON object per line; the
event classes below are those lines (`encode_event` / `decode_event`).
"""

from __future__ import annotations

import enum
import json
import math
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from core.backend import Backend

DEFAULT_PROMPT_TOKENS = 512
DEFAULT_GEN_TOKENS = 128
DEFAULT_WARMUP_TOKENS = 20
DEVICE_CHOICES = ("auto", "rocm", "cuda", "cpu")
ENGINE_CHOICES = ("torch", "mlx")
EMULATE_CHOICES = ("auto", "rocm", "none")
"""The torch engine's in-flight queue: MLX-ROCm's (`rocm`), none, or `auto` (ROCm's on
ROCm and the CPU, none on CUDA, where MLX has no bound)."""
ATTENTION_CHOICES = ("auto", "mlx-fallback", "torch-sdpa")
"""The torch engine's attention: MLX's unfused fallback (scores materialised, what MLX
runs on the CPU and on ROCm), torch's fused SDPA (like MLX's CUDA kernels), or `auto`
(the one MLX runs on the measured backend)."""
ATTENTION_LABELS = {"mlx-fallback": "MLX's unfused attention", "torch-sdpa": "torch's SDPA"}
"""How a result names the attention a torch run ran (`extra["attention"]`)."""
FUSE_BF16_CHOICES = ("auto", "on", "off")
"""The torch engine's model of MLX-ROCm's fused BF16-scale quantized kernel (no
dequantized copy): `auto` on a ROCm device with the queue emulated."""
"""Measuring engines: vramscope's torch decoder (`hip_backend`, emulating MLX-ROCm's
in-flight queue) and real MLX through mlx-lm (the ground truth)."""
DEFAULT_ENGINE = "torch"
MAX_MEASURED_TOKENS = 1 << 24
"""The most prompt, decode or warm-up tokens a run takes (16,777,216: above any
model's trained context); past it a measurement would only run for days."""
ENGINE_LABELS = {"torch": "torch engine", "mlx": "MLX (mlx-lm)"}


_DEVICE_BACKENDS = {"rocm": "rocm", "cuda": "cuda", "metal": "metal", "cpu": "cpu"}


def comparison_backend(engine: str, device_kind: str) -> Backend:
    """The estimate formula a peak is held against.

    A torch run that emulates MLX-ROCm's in-flight queue is compared with the ROCm
    formula (in-flight term included) on any device (`MeasuredPeak.estimate_backend`
    handles a torch run without the queue). An mlx peak is compared with the formula
    of the backend it ran on: the CPU, Metal and CUDA have no in-flight term; ROCm
    (and a GPU of unknown kind) has it.
    """
    if engine != "mlx":
        return Backend.ROCM
    return Backend(_DEVICE_BACKENDS.get(device_kind, "rocm"))


class FailureKind(enum.Enum):
    """Why a measurement produced no peak."""

    NO_TORCH = "no_torch"
    NO_MLX = "no_mlx"
    NO_DEVICE = "no_device"
    UNSUPPORTED_DEVICE = "unsupported_device"
    OUT_OF_MEMORY = "out_of_memory"
    UNSUPPORTED_MODEL = "unsupported_model"
    BAD_MODEL = "bad_model"
    KILLED = "killed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    INTERNAL = "internal"

    @property
    def label(self) -> str:
        """Short words for a status line."""
        return _FAILURE_LABELS[self]


_FAILURE_LABELS = {
    FailureKind.NO_TORCH: "torch is not installed",
    FailureKind.NO_MLX: "mlx is not installed",
    FailureKind.NO_DEVICE: "no such device",
    FailureKind.UNSUPPORTED_DEVICE: "no kernels for this GPU",
    FailureKind.OUT_OF_MEMORY: "out of memory",
    FailureKind.UNSUPPORTED_MODEL: "not supported for measurement",
    FailureKind.BAD_MODEL: "unusable model files",
    FailureKind.KILLED: "measuring process killed",
    FailureKind.CANCELLED: "cancelled",
    FailureKind.TIMEOUT: "timed out",
    FailureKind.INTERNAL: "internal error",
}


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
    warmup_tokens: int = DEFAULT_WARMUP_TOKENS
    """Decode tokens of the warm-up pass that ran before the measured pass."""
    weights_bytes: int | None = None
    """Bytes of weight tensors held on the device after the load."""
    device_used_source: str | None = None
    """Where `device_used_delta_bytes` came from (sysfs, amdsmi, cudaMemGetInfo)."""
    family: str | None = None
    """The decoder family the engine ran (`llama`, `qwen3_moe`, ...)."""
    engine: str = DEFAULT_ENGINE
    """Which engine produced the peak: `torch` or `mlx` (see ENGINE_CHOICES). Records
    written before engines existed are torch's."""
    mlx_version: str | None = None
    """`mlx.core.__version__` of an mlx run."""
    mlx_lm_version: str | None = None
    """`mlx_lm.__version__` of an mlx run."""
    active_bytes: int | None = None
    """mx.get_active_memory() at the end of an mlx run (weights and anything still held)."""
    cache_bytes: int | None = None
    """mx.get_cache_memory() at the end of an mlx run (freed buffers MLX keeps for reuse)."""
    kv_cache_mode: str = "fp16"
    """`fp16`, or `int8` (mlx-lm's 8-bit quantized KV cache; mlx engine only)."""

    @property
    def engine_label(self) -> str:
        """Which engine, in words, for a table cell or a status line."""
        return ENGINE_LABELS.get(self.engine, self.engine)

    @property
    def emulated_queue(self) -> bool:
        """True for a torch run that emulated MLX-ROCm's in-flight queue (ROCm, the CPU,
        or `--emulate rocm`; records from before the choice existed always did)."""
        return self.engine != "mlx" and self.extra.get("inflight_emulation", "rocm") == "rocm"

    @property
    def attention_label(self) -> str | None:
        """The attention a torch run ran, in words; None for an mlx run (MLX ran its own)
        and for records from before the choice existed."""
        kind = self.extra.get("attention") if self.engine != "mlx" else None
        return ATTENTION_LABELS.get(str(kind), str(kind)) if kind else None

    @property
    def missing_queue(self) -> str | None:
        """Why the run had no in-flight queue ("no in-flight queue (MLX on cpu)"), or
        None when it had one (its budget is `inflight_mib`, 0 with the bound off)."""
        if self.engine == "mlx" and self.device_kind != "rocm":
            return f"no in-flight queue (MLX on {self.device_kind})"
        if self.engine != "mlx" and not self.emulated_queue:
            return f"no in-flight queue emulated (torch on {self.device_kind})"
        return None

    @property
    def budget_words(self) -> str:
        """The in-flight budget: `1024 MiB`, or `0 (bound off)`."""
        return f"{self.inflight_mib} MiB" if self.inflight_mib else "0 (bound off)"

    @property
    def estimate_backend(self) -> Backend:
        """The backend whose formula this peak is held against (`comparison_backend`,
        and for a torch run without the emulated queue its own device's)."""
        if self.engine != "mlx" and not self.emulated_queue and self.device_kind in ("cuda", "cpu"):
            return Backend(self.device_kind)
        return comparison_backend(self.engine, self.device_kind)

    @property
    def counted(self) -> str:
        """The engine and what its peak counts, in one phrase: "MLX peak
        (mx.get_peak_memory), cpu" or "torch engine, RSS over baseline, emulating
        MLX-ROCm's in-flight queue"."""
        if self.engine == "mlx":
            return self.peak_kind
        what = "RSS over baseline" if self.device_kind == "cpu" else "allocator peak"
        queue = (
            "emulating MLX-ROCm's in-flight queue" if self.emulated_queue else "no in-flight queue"
        )
        return f"torch engine, {what}, {queue}"

    @property
    def context_tokens(self) -> int:
        """The estimate's context for this workload: P + G."""
        return self.prompt_tokens + self.gen_tokens

    @property
    def margin(self) -> Margin | None:
        """Estimate against this peak, when the estimate is known."""
        if self.estimate_bytes is None:
            return None
        return margin(self.estimate_bytes, self.peak_bytes)

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


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """ValueError naming `name` and its choices unless `value` is one of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}")


@dataclass(frozen=True)
class MeasureRequest:
    """What to measure: a model as the user named it and the bench workload.

    The estimate shown beside the peak is computed for the same model at context
    `prompt_tokens + gen_tokens`, batch 1, fp16 KV, with this run's in-flight
    budget and mlxcel's ROCm formula (the engine applies ROCm's bound on every device).
    """

    model: str
    """A folder path or a built-in profile id (resolved with `core.catalog.resolve_entry`)."""
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS
    gen_tokens: int = DEFAULT_GEN_TOKENS
    warmup_tokens: int = DEFAULT_WARMUP_TOKENS
    inflight: str | int | None = None
    """`MLX_ROCM_MAX_INFLIGHT_MB` as raw text (same parser as the estimate) or MiB;
    None reads the variable from the environment, unset meaning 1024."""
    device: str = "auto"
    """`auto`, `rocm`, `cuda` or `cpu`."""
    models_dirs: tuple[str, ...] = ()
    synthetic: bool = False
    """Use random weights of the real shapes even when weights are on disk."""
    headroom_factor: float | None = None
    """Estimate knob; None reads `MLXCEL_HEADROOM_FACTOR` (unset 1.20)."""
    activation_mult: float | None = None
    """Estimate knob; None reads `MLXCEL_ACTIVATION_MULT` (unset 2.0)."""
    host_memory_cap_bytes: int | None = None
    """Cap on the measuring process's memory growth (address space over its start),
    so a CPU run that would not fit fails as out of memory instead of swapping."""
    timeout_s: float | None = None
    """Kill the run after this many seconds (None: no limit)."""
    engine: str = DEFAULT_ENGINE
    """`torch` (vramscope's decoder) or `mlx` (mlx-lm in the child)."""
    emulate: str = "auto"
    """The torch engine's in-flight queue, one of EMULATE_CHOICES."""
    attention: str = "auto"
    """The torch engine's attention, one of ATTENTION_CHOICES."""
    fuse_bf16: str = "auto"
    """The torch engine's fused BF16-scale kernel model, one of FUSE_BF16_CHOICES."""
    kv_int8: bool = False
    """Measure with an 8-bit KV cache (mlx-lm's quantized cache; the mlx engine only) and
    compare with the estimate's int8 KV mode."""

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "gen_tokens", "warmup_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
            if value > MAX_MEASURED_TOKENS:
                raise ValueError(f"{name} must be at most {MAX_MEASURED_TOKENS}, got {value}")
        if self.prompt_tokens < 1:
            raise ValueError("prompt_tokens must be at least 1")
        check_choice("device", self.device, DEVICE_CHOICES)
        check_choice("engine", self.engine, ENGINE_CHOICES)
        check_choice("emulate", self.emulate, EMULATE_CHOICES)
        check_choice("attention", self.attention, ATTENTION_CHOICES)
        check_choice("fuse_bf16", self.fuse_bf16, FUSE_BF16_CHOICES)
        if self.engine == "mlx" and (self.attention, self.fuse_bf16) != ("auto", "auto"):
            raise ValueError("--attention and --fuse-bf16 choose the torch engine's kernels")
        if self.kv_int8 and self.engine != "mlx":
            raise ValueError("an int8 KV cache is measured by the mlx engine only (--engine mlx)")

    @property
    def context_tokens(self) -> int:
        """The estimate's context: P + G."""
        return self.prompt_tokens + self.gen_tokens


# -- a peak from untrusted JSON (history lines, the child's result line) --------------


_NON_NEGATIVE = frozenset(
    {"peak_bytes", "prompt_tokens", "gen_tokens", "warmup_tokens", "inflight_mib"}
)


_CHECKED_TYPES = frozenset({"bool", "int", "float", "str", "None"})


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
        if not _type_ok(value, str(f.type)):
            raise TypeError(f"'{f.name}' is {json.dumps(value)[:40]}, not {f.type}")
        if f.name in _NON_NEGATIVE and value < 0:
            raise TypeError(f"'{f.name}' is negative")
    return MeasuredPeak.from_dict(result)


# -- events: the child's JSON lines, and what the launcher hands the UI ---------------


@dataclass(frozen=True)
class MeasureProgress:
    """A step of the run: `phase` is load, warmup, prefill or decode."""

    phase: str
    done: int
    total: int
    detail: str = ""

    @property
    def fraction(self) -> float:
        """done / total in [0, 1] (0 when the total is unknown)."""
        return min(1.0, self.done / self.total) if self.total > 0 else 0.0


@dataclass(frozen=True)
class MeasureNotice:
    """A line worth showing that is not an error (synthetic weights, a budget fallback)."""

    message: str


@dataclass(frozen=True)
class MeasureResult:
    """The run finished: its peak (with the estimate attached by the launcher)."""

    peak: MeasuredPeak


@dataclass(frozen=True)
class MeasureFailed:
    """The run ended without a peak."""

    failure: MeasurementFailure


MeasureEvent = MeasureProgress | MeasureNotice | MeasureResult | MeasureFailed


def event_to_dict(event: MeasureEvent) -> dict[str, Any]:
    """The JSON object of one event line."""
    if isinstance(event, MeasureProgress):
        return {"event": "progress", **asdict(event)}
    if isinstance(event, MeasureNotice):
        return {"event": "notice", "message": event.message}
    if isinstance(event, MeasureResult):
        return {"event": "result", "peak": event.peak.to_dict()}
    return {"event": "failure", **event.failure.to_dict()}


def encode_event(event: MeasureEvent) -> str:
    """One line of the child's protocol (no newline)."""
    return json.dumps(event_to_dict(event), separators=(",", ":"), allow_nan=False)


def decode_event(line: str) -> MeasureEvent | None:
    """Parse one protocol line; None for anything that is not a well-formed event."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        kind = data.get("event")
        if kind == "progress":
            return MeasureProgress(
                str(data["phase"]), int(data["done"]), int(data["total"]), str(data["detail"])
            )
        if kind == "notice":
            return MeasureNotice(str(data["message"]))
        if kind == "result":
            return MeasureResult(checked_peak(data["peak"]))
        if kind == "failure":
            return MeasureFailed(MeasurementFailure.from_dict(data))
    except (KeyError, TypeError, ValueError):
        return None
    return None
