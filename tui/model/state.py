"""What the explorer is showing, as one immutable value, and how it starts.

Every control edits one field of `ExplorerState`; the estimate, the solvers,
the chart and the command lines are all pure functions of the state plus the
model snapshot and the detected available memory. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from core.backend import Backend, BackendChoice
from core.environment import resolve_settings
from core.estimate.activation import ACTIVATION_BUFFER_MULT
from core.estimate.available import AvailableMemory
from core.estimate.estimate import DEFAULT_CTX_LEN, EstimateSettings, QuantHint, Workload
from core.estimate.headroom import DEFAULT_HEADROOM_FACTOR
from core.estimate.inflight import ROCM_DEFAULT_MAX_INFLIGHT_MB
from core.measurement.engine import DEFAULT_ENGINE, Engine
from core.units import format_bytes_short
from tui.model.presets import (
    CUSTOM,
    DETECTED,
    DEVICE_FREE,
    DEVICE_KEYS,
    DEVICE_TOTAL,
    PRESETS_BY_KEY,
    preset_backend,
)

if TYPE_CHECKING:  # the device reading: core.device is read by a worker, not for frame one
    from core.device.memory import DeviceMemory

STORED = "stored"
QUANTIZE_AS = (STORED, "mlx-8bit", "mlx-4bit")
"""The "Quantize as" choices: `vramscope fit --quantizations`' words
(core.answer.fit.QUANTIZATION_CHOICES; not imported here, frame one needs none of it)."""

DEFAULT_MODEL = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
"""The model of mlxcel's worked example."""

_PENDING = AvailableMemory(0, "not detected yet")


@dataclass(frozen=True)
class MemoryChoice:
    """Where the available memory comes from: detected, a preset, or a typed size."""

    key: str = DETECTED
    """`detected`, `custom` or a preset key."""
    custom_bytes: int = 0

    def resolve(
        self, detected: AvailableMemory | None, device: DeviceMemory | None = None
    ) -> AvailableMemory | None:
        """The available memory this choice means (None while detection, or the device
        reading for `device-free` / `device-total`, is pending)."""
        if self.key == DETECTED:
            return detected
        if self.key in DEVICE_KEYS:
            from core.device.memory import device_budget

            return device_budget(DEVICE_KEYS[self.key], device) if device else None
        if self.key == CUSTOM:
            return AvailableMemory(self.custom_bytes, "typed size")
        return PRESETS_BY_KEY[self.key].available()


@dataclass(frozen=True)
class ExplorerState:
    """Every input of the estimate the explorer lets you change, and the measuring engine.

    Add a control by adding a field here (with its default), a widget in `Controls`
    that posts `Controls.Changed` with the field changed, and a line in `Controls.show`.
    """

    model: str = DEFAULT_MODEL
    """The model as you would pass it to `inspect`: a profile name, repo id or folder."""
    max_tokens: int = DEFAULT_CTX_LEN
    batch: int = 1
    kv_int8: bool = False
    quant: QuantHint = QuantHint.DEFAULT
    headroom_factor: float = DEFAULT_HEADROOM_FACTOR
    activation_mult: float = ACTIVATION_BUFFER_MULT
    inflight_mib: int = ROCM_DEFAULT_MAX_INFLIGHT_MB
    backend: Backend = Backend.ROCM
    memory: MemoryChoice = field(default_factory=MemoryChoice)
    engine: Engine = DEFAULT_ENGINE
    """What `m` measures with (`core.measurement.engine.ENGINE_CHOICES`)."""
    devices: int = 1
    """Ranks of a split MLX load (1 = one device; up to 8)."""
    split: str = "tp"
    """How the ranks split the model: `tp` (tensor parallel) or `pp` (pipeline)."""
    device_memory: str = ""
    """Each rank's available memory as typed in the Devices row (`24GB,16GB`: one size
    per device, or one for all); blank gives every rank the Available value."""
    calibrated_verdict: bool = False
    """`v`: hold the verdict (its colour, the summary line) against vramscope's calibrated
    total instead of mlxcel's, when a calibration applies; mlxcel's is the default."""
    backend_pinned: bool = False
    """`--backend` was given: picking a preset leaves the backend alone."""
    quantize_as: str = STORED
    """`stored`, or a what-if of `vramscope fit` (`mlx-8bit`, `mlx-4bit`): the weights
    mlx-lm's conversion would write, vramscope's own figure (offered for 16/32-bit
    float models only)."""

    def workload(self) -> Workload:
        """The estimate's workload."""
        return Workload(self.max_tokens, self.batch, self.kv_int8, self.quant)

    def settings(self, available: AvailableMemory) -> EstimateSettings:
        """The estimate's settings against a given available memory."""
        return EstimateSettings(
            backend=self.backend,
            available=available,
            headroom_factor=self.headroom_factor,
            activation_mult=self.activation_mult,
            inflight_mib=self.inflight_mib,
        )


@dataclass(frozen=True)
class LaunchOptions:
    """What the command line asked for; `initial_state` turns it into a state."""

    model: str = DEFAULT_MODEL
    max_tokens: int = DEFAULT_CTX_LEN
    batch: int = 1
    kv_int8: bool = False
    quant: QuantHint = QuantHint.DEFAULT
    backend: str = "auto"
    """`auto` or a backend value (`rocm`, `cuda`, `metal`, `cpu`)."""
    inflight_raw: str | None = None
    """`--inflight-mb`, parsed like `MLX_ROCM_MAX_INFLIGHT_MB`."""
    memory_limit: int | None = None
    memory_device: str | None = None
    """`--memory-limit free|total`: this device's free or total memory."""
    preset: str | None = None
    models_dirs: tuple[Path, ...] = ()


def choose_backend(flag: str, machine: BackendChoice, preset: str | None = None) -> BackendChoice:
    """The starting backend: the flag, else the preset's device's, else this machine's;
    ROCm when no GPU is found.

    With no GPU the choice falls on ROCm so the in-flight reserve, the term this
    tool exists to show, is on screen; the header says it was chosen.
    """
    if flag != "auto":
        return BackendChoice(Backend(flag), False, "chosen with --backend")
    if (by_preset := preset_backend(flag, preset)) is not None:
        return by_preset
    if machine.backend is Backend.CPU:
        return BackendChoice(Backend.ROCM, False, "chosen: no GPU detected")
    return machine


def initial_state(
    options: LaunchOptions, env: Mapping[str, str | None], start: BackendChoice
) -> tuple[ExplorerState, tuple[str, ...]]:
    """The first state and any warnings about ignored environment values."""
    resolved = resolve_settings(
        start.backend, env, inflight_flag=options.inflight_raw, available=_PENDING
    )
    if options.preset is not None:
        memory = MemoryChoice(options.preset)
    elif options.memory_device is not None:
        memory = MemoryChoice(DEVICE_FREE if options.memory_device == "free" else DEVICE_TOTAL)
    elif options.memory_limit:
        memory = MemoryChoice(CUSTOM, options.memory_limit)
    else:
        memory = MemoryChoice()
    state = ExplorerState(
        model=options.model,
        max_tokens=options.max_tokens,
        batch=options.batch,
        kv_int8=options.kv_int8,
        quant=options.quant,
        headroom_factor=resolved.settings.headroom_factor,
        activation_mult=resolved.settings.activation_mult,
        inflight_mib=resolved.inflight.mib,
        backend=start.backend,
        memory=memory,
        backend_pinned=options.backend != "auto",
    )
    return state, resolved.warnings


def with_memory(state: ExplorerState, choice: MemoryChoice) -> ExplorerState:
    """The state with another source of available memory: a preset also selects its
    device's backend (CUDA for an NVIDIA card, ROCm for an AMD one), unless `--backend`
    was given."""
    preset = PRESETS_BY_KEY.get(choice.key)
    if preset is None or state.backend_pinned:
        return replace(state, memory=choice)
    return replace(state, memory=choice, backend=preset.backend)


def backend_status(current: Backend, start: BackendChoice, machine: BackendChoice) -> str:
    """The header's backend words: detected here, or chosen (and what was detected)."""
    if current is start.backend:
        if start.detected:
            return f"{current.label} · detected ({start.reason})"
        return f"{current.label} · {start.reason}"
    if machine.backend is Backend.CPU:
        return f"{current.label} · chosen (no GPU detected)"
    return f"{current.label} · chosen (this machine: {machine.backend.label})"


def backend_status_short(current: Backend, start: BackendChoice) -> str:
    """The header's backend words when space is short: `ROCm · detected` or `· chosen`."""
    detected = current is start.backend and start.detected
    return f"{current.label} · {'detected' if detected else 'chosen'}"


def available_status(available: AvailableMemory | None) -> str:
    """The header's available-memory words."""
    if available is None:
        return "available memory: detecting…"
    return f"{format_bytes_short(available.bytes)} available · {available.source}"


BACKEND_ORDER: tuple[Backend, ...] = (Backend.ROCM, Backend.CUDA, Backend.METAL, Backend.CPU)
MAX_DEVICES = 8


def next_value(state: ExplorerState, name: str) -> object:
    """The value a cycling key moves a field to: KV dtype, backend, device count, split
    (TP <-> PP) or measuring engine."""
    if name == "kv_int8":
        return not state.kv_int8
    if name == "backend":
        return BACKEND_ORDER[(BACKEND_ORDER.index(state.backend) + 1) % len(BACKEND_ORDER)]
    if name == "devices":
        return state.devices % MAX_DEVICES + 1
    if name == "calibrated_verdict":
        return not state.calibrated_verdict
    if name == "split":
        return "pp" if state.split == "tp" else "tp"
    if name == "engine":
        engines = tuple(Engine)
        return engines[(engines.index(state.engine) + 1) % len(engines)]
    raise ValueError(f"no cycling key for {name}")
