"""What to measure: a model as the user named it and the bench workload."""

from __future__ import annotations

from dataclasses import dataclass

from core.measurement.engine import (
    ATTENTION_CHOICES,
    DEFAULT_ENGINE,
    EMULATE_CHOICES,
    ENGINE_CHOICES,
    FUSE_BF16_CHOICES,
)

DEFAULT_PROMPT_TOKENS = 512
DEFAULT_GEN_TOKENS = 128
DEFAULT_WARMUP_TOKENS = 20
DEVICE_CHOICES = ("auto", "rocm", "cuda", "cpu")
MAX_MEASURED_TOKENS = 1 << 24
"""The most prompt, decode or warm-up tokens a run takes (16,777,216: above any
model's trained context); past it a measurement would only run for days."""


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
    """A folder path or a built-in profile id (resolved with
    `core.catalog.resolve.resolve_entry`)."""
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
