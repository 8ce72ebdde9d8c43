"""What to measure: a model as the user named it and the bench workload."""

from __future__ import annotations

from dataclasses import dataclass

from core.measurement.engine import (
    DEFAULT_ENGINE,
    Engine,
    check_choice,
    check_options,
    engine_options,
)

DEFAULT_PROMPT_TOKENS = 512
DEFAULT_GEN_TOKENS = 128
DEFAULT_WARMUP_TOKENS = 20
DEVICE_CHOICES = ("auto", "rocm", "cuda", "cpu")
MAX_MEASURED_TOKENS = 1 << 24
"""The most prompt, decode or warm-up tokens a run takes (16,777,216: above any
model's trained context); past it a measurement would only run for days."""


@dataclass(frozen=True)
class MeasureRequest:
    """What to measure: a model as the user named it and the bench workload.

    The estimate shown beside the peak is computed for the same model at context
    `prompt_tokens + gen_tokens`, batch 1, fp16 KV, with this run's in-flight
    budget and the formula the engine's peaks are held against
    (`core.measurement.comparison`: ROCm's for the torch engine, which applies ROCm's
    bound on every device).
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
    engine: Engine = DEFAULT_ENGINE
    """`Engine.TORCH` (vramscope's decoder) or `Engine.MLX` (mlx-lm in the child); a name
    is taken too."""
    emulate: str = "auto"
    """The torch engine's option `core.measurement.engine.EMULATE`."""
    attention: str = "auto"
    """The torch engine's option `core.measurement.engine.ATTENTION`."""
    fuse_bf16: str = "auto"
    """The torch engine's option `core.measurement.engine.FUSE_BF16`."""
    kv_int8: bool = False
    """Measure with an 8-bit KV cache (mlx-lm's quantized cache; an engine whose spec has
    `int8_kv`) and compare with the estimate's int8 KV mode."""

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
        object.__setattr__(self, "engine", Engine.named(self.engine))
        if not self.engine.spec.measures:
            raise ValueError(f"{self.engine.label} is measured by `vramscope run -- CMD` only")
        check_options(self.engine, self.options)
        if self.kv_int8 and not self.engine.spec.int8_kv:
            which = " or ".join(e.value for e in Engine if e.spec.int8_kv)
            raise ValueError(f"an int8 KV cache is measured by the {which} engine only")

    @property
    def options(self) -> dict[str, object]:
        """The engines' options as asked (`core.measurement.engine.engine_options`)."""
        return {option.name: getattr(self, option.name) for option in engine_options()}

    @property
    def context_tokens(self) -> int:
        """The estimate's context: P + G."""
        return self.prompt_tokens + self.gen_tokens
