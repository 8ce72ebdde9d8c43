"""The measuring engines: one `Engine` value each, and what each declares (`EngineSpec`).

- `Engine.TORCH`: vramscope's torch decoder (hip_backend/torch_engine), emulating
  MLX-ROCm's in-flight queue;
- `Engine.MLX`: real MLX through mlx-lm (hip_backend/mlx_engine), the ground truth;
- `Engine.EXTERNAL`: the user's own command under `vramscope run` (hip_backend/external),
  measured from outside, by what the kernel reports for its processes. It measures
  nothing vramscope asks for, so `measure`, `table` and the explorer's engines leave it
  out (`MEASURING_ENGINES`); the history, `calibrate` and the history view read it.

A spec says, in core's terms and without importing the engine: its label, its options
(the choices a request makes for it, checked once, by `check_options`), the estimate
formula its peaks are held against (`EngineSpec.formula_for`, the one rule that
`core.measurement.comparison.held_against` applies for `measure`, `table`, the explorer
and `calibrate`), what its headline peak counts on each device (`EngineSpec.peak_words`,
the words a calibration fitted to it carries), and its result fields
(`core.measurement.fields`). An engine's value is the name
the CLI, the JSON and the history use (`torch`, `mlx`); `Engine` is a plain kind
(`core.kind.Kind`): never equal to its name, parsed once by `Engine.named`, written as
`.value`.

A third engine: a member here with its spec in `ENGINE_SPECS`, its subpackage under
hip_backend/, and its line in hip_backend/engines.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from core.backend import Backend
from core.kind import Kind
from core.measurement.fields import ExternalFields, MlxFields, TorchFields


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """ValueError naming `name` and its choices unless `value` is one of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}")


class Engine(Kind):
    """Which engine measures a run (its value is its name: `torch`, `mlx`)."""

    TORCH = "torch"
    MLX = "mlx"
    EXTERNAL = "external"

    @property
    def spec(self) -> EngineSpec:
        """What this engine declares."""
        return ENGINE_SPECS[self]

    @property
    def label(self) -> str:
        """The engine in words, for a table cell or a status line."""
        return self.spec.label


ENGINE_NAMES: tuple[str, ...] = tuple(e.value for e in Engine)
"""Every engine's name, as a record may hold it (`calibrate --engine`'s choices)."""
DEFAULT_ENGINE = Engine.TORCH


@dataclass(frozen=True)
class EngineOption:
    """A choice a request makes for one engine (a `MeasureRequest` field of that name)."""

    name: str
    """The `MeasureRequest` field; its flag is the name with dashes (`--fuse-bf16`)."""
    choices: tuple[str, ...]
    doc: str
    """What it chooses, in a phrase: the flag's help after the engine's label (the CLI's
    flags are generated from these: tui/commands/shared/flags.py)."""
    default: str = "auto"
    labels: Mapping[str, str] = field(default_factory=dict)
    """How a result names the choice that ran."""


EMULATE = EngineOption(
    "emulate",
    ("auto", "rocm", "none"),
    "emulate MLX-ROCm's in-flight queue (rocm) or not (none; on the CPU, MLX's CPU "
    "stream a decoder block behind the host instead); auto emulates it on ROCm and the "
    "CPU, not on CUDA, where MLX has none",
)
ATTENTION = EngineOption(
    "attention",
    ("auto", "mlx-fallback", "torch-sdpa"),
    "MLX's unfused attention, which holds an H x L x S score matrix (mlx-fallback: what "
    "MLX runs on the CPU and ROCm) or torch's fused SDPA (torch-sdpa: like MLX's CUDA "
    "kernels); auto picks the device's",
    labels={"mlx-fallback": "MLX's unfused attention", "torch-sdpa": "torch's SDPA"},
)
FUSE_BF16 = EngineOption(
    "fuse_bf16",
    ("auto", "on", "off"),
    "model MLX-ROCm's fused kernel for BF16-scale quantized matmuls (no dequantized "
    "weight copy); auto: on a ROCm GPU with the queue emulated",
)


@dataclass(frozen=True)
class EngineSpec:
    """What an engine declares."""

    label: str
    """The engine in words (`torch engine`, `MLX (mlx-lm)`)."""
    fields: type[TorchFields] | type[MlxFields] | type[ExternalFields]
    """What its results record beside the common fields (`MeasuredPeak.extra`)."""
    result_fields: tuple[str, ...]
    """The `MeasuredPeak` fields only this engine fills."""
    options: tuple[EngineOption, ...] = ()
    emulates_rocm_queue: bool = False
    """It emulates MLX-ROCm's in-flight queue: a run that did is held against ROCm's
    formula (in-flight term included) wherever it ran."""
    own_formula_devices: frozenset[Backend] = frozenset()
    """The devices whose own formula holds a run without a queue (others: ROCm's)."""
    int8_kv: bool = False
    """It measures an 8-bit KV cache (the estimate's int8 KV mode)."""
    ranks: bool = False
    """It measures a load split over ranks (`--tp N`, `--pp N`)."""
    peak_label: str = "the recorded peak"
    """What its headline peak (`MeasuredPeak.peak_bytes`) counts, on most devices."""
    peak_labels: Mapping[Backend, str] = field(default_factory=dict)
    """What it counts on the devices where that differs (the torch engine on the CPU)."""
    figure_labels: Mapping[str, str] = field(default_factory=dict)
    """Its other recorded figures a calibration can fit (`calibrate --target`), in words."""
    measures: bool = True
    """vramscope runs it on a request (`measure`, `table`, the explorer's `m`); False for
    the user's own command, which only `vramscope run` measures."""

    def formula_for(self, device: Backend | None, *, emulated_queue: bool) -> Backend:
        """The estimate formula a peak of this engine on `device` is held against (None:
        a device kind no backend names, as in a damaged record): ROCm's for a run that
        emulated MLX-ROCm's queue, else the device's own where the engine has one, else
        ROCm's."""
        if emulated_queue and self.emulates_rocm_queue:
            return Backend.ROCM
        if device is not None and device in self.own_formula_devices:
            return device
        return Backend.ROCM

    def peak_words(self, device: Backend) -> str:
        """What its headline peak counts on `device`, in words."""
        return self.peak_labels.get(device, self.peak_label)


ENGINE_SPECS: Mapping[Engine, EngineSpec] = {
    Engine.TORCH: EngineSpec(
        label="torch engine",
        fields=TorchFields,
        result_fields=(
            "torch_version",
            "runtime_version",
            "reserved_peak_bytes",
            "device_used_delta_bytes",
            "device_used_source",
        ),
        options=(EMULATE, ATTENTION, FUSE_BF16),
        emulates_rocm_queue=True,
        own_formula_devices=frozenset({Backend.CUDA, Backend.CPU}),
        peak_label="the torch engine's allocator peak of live tensors",
        peak_labels={
            Backend.CPU: "the torch engine's peak resident memory (RSS) over its baseline"
        },
    ),
    Engine.MLX: EngineSpec(
        label="MLX (mlx-lm)",
        fields=MlxFields,
        result_fields=(
            "mlx_version",
            "mlx_lm_version",
            "active_bytes",
            "cache_bytes",
            "active_plus_cache_peak_bytes",
            "os_peak_bytes",
            "os_peak_source",
        ),
        own_formula_devices=frozenset(Backend),
        int8_kv=True,
        ranks=True,
        peak_label="MLX's peak (mx.get_peak_memory)",
        figure_labels={
            "active_plus_cache": "MLX's active + cache peak (freed-buffer cache included)",
            "os_peak": "the process's OS peak (VmHWM on the CPU, its device memory on ROCm)",
        },
    ),
    Engine.EXTERNAL: EngineSpec(
        label="your command",
        fields=ExternalFields,
        result_fields=(),
        own_formula_devices=frozenset(Backend),
        peak_label="the command's device memory (its processes' VRAM + GTT on amdgpu, "
        "NVML's per-process used memory on NVIDIA)",
        peak_labels={
            Backend.CPU: "the command's host RSS (the sum of its processes' VmHWM, at "
            "the largest sample)"
        },
        measures=False,
    ),
}


MEASURING_ENGINES: tuple[Engine, ...] = tuple(e for e in Engine if e.spec.measures)
"""The engines vramscope runs, in the order the explorer and the palette offer them."""
ENGINE_CHOICES = MEASURING_ENGINES
MEASURING_ENGINE_NAMES: tuple[str, ...] = tuple(e.value for e in MEASURING_ENGINES)
"""Their names (`measure --engine`'s and `table --engine`'s choices)."""


def engine_options() -> tuple[EngineOption, ...]:
    """Every engine's options (each a `MeasureRequest` field)."""
    return tuple(option for e in Engine for option in e.spec.options)


def check_options(engine: Engine, values: Mapping[str, object]) -> None:
    """The one check of the engines' options: every value is one of its option's choices,
    and another engine's option is left at its default. ValueError otherwise."""
    for owner in Engine:
        for option in owner.spec.options:
            value = values.get(option.name, option.default)
            check_choice(option.name, value, option.choices)
            if owner is not engine and value != option.default:
                raise ValueError(
                    f"{option.name} is an option of the {owner.label}, not of {engine.label}"
                )
