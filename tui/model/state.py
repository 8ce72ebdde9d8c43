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

from core.answer.device import (
    Device,
    DeviceRequest,
    MachineReadings,
    MemoryRequest,
    MemorySource,
    resolve_backend,
    resolve_device,
)
from core.answer.quantization import Quantization
from core.answer.question import ONE_DEVICE, Question, Split
from core.backend import Backend, BackendChoice
from core.device_memory import Budget
from core.environment import resolve_settings
from core.estimate.activation import ACTIVATION_BUFFER_MULT
from core.estimate.available import AvailableMemory
from core.estimate.estimate import DEFAULT_CTX_LEN, EstimateSettings, QuantHint, Workload
from core.estimate.headroom import DEFAULT_HEADROOM_FACTOR
from core.estimate.inflight import ROCM_DEFAULT_MAX_INFLIGHT_MB
from core.load.llama_cpp_flags import FlashAttn, KvCacheType
from core.measurement.engine import DEFAULT_ENGINE, Engine
from core.parallel.sharding import ParallelKind
from tui.model.presets import (
    CUSTOM,
    DETECTED,
    DEVICE_FREE,
    DEVICE_KEYS,
    DEVICE_TOTAL,
    PRESETS_BY_KEY,
)
from tui.model.scales import ALL_GPU_LAYERS

if TYPE_CHECKING:  # not imported for the first frame: a GGUF's flags bring it
    from core.load.llama_cpp import LlamaCppOptions

QUANTIZE_AS = tuple(q.word for q in Quantization)
"""The "Quantize as" choices' words (`vramscope fit --quantizations`'): the keys of the
loader's what-ifs."""

DEFAULT_MODEL = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
"""The model of mlxcel's worked example."""

_PENDING = AvailableMemory(0, "not detected yet")


@dataclass(frozen=True)
class MemoryChoice:
    """Where the available memory comes from: detected, a preset, or a typed size."""

    key: str = DETECTED
    """`detected`, `custom` or a preset key."""
    custom_bytes: int = 0

    def request(self) -> MemoryRequest:
        """This choice as the one device resolution reads it (`core.answer.device`)."""
        if self.key == DETECTED:
            return MemoryRequest()
        if self.key in DEVICE_KEYS:
            free = DEVICE_KEYS[self.key] is Budget.FREE
            return MemoryRequest(MemorySource.DEVICE_FREE if free else MemorySource.DEVICE_TOTAL)
        if self.key == CUSTOM:
            return MemoryRequest(MemorySource.SIZE, size=self.custom_bytes, size_words="typed size")
        return MemoryRequest(MemorySource.PRESET, preset=self.key)


@dataclass(frozen=True)
class ExplorerState:
    """Every input of the estimate the explorer lets you change, and the measuring engine.

    Add a control by adding a field here (with its default) and its descriptor in
    `tui.model.control_specs.CONTROLS`, which the panel, keys, help, palette and command
    lines read.
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
    """What `m` measures with (`core.measurement.engine.ENGINE_CHOICES`, or
    `Engine.EXTERNAL`: `m` asks for the user's own command)."""
    devices: int = 1
    """Ranks of a split MLX load (1 = one device; up to 8)."""
    split: ParallelKind = ParallelKind.TENSOR
    """How the ranks split the model: tensor parallel or pipeline parallel."""
    device_memory: str = ""
    """Each rank's available memory as typed in the Devices row (`24GB,16GB`: one size
    per device, or one for all); blank gives every rank the Available value."""
    calibrated_verdict: bool = False
    """`v`: hold the verdict (its colour, the summary line) against vramscope's calibrated
    total instead of mlxcel's, when a calibration applies; mlxcel's is the default."""
    backend_pinned: bool = False
    """`--backend` was given: picking a preset leaves the backend alone."""
    quantize_as: Quantization = Quantization.STORED
    """As stored, or a what-if of `vramscope fit` (`mlx-8bit`, `mlx-4bit`): the weights
    mlx-lm's conversion would write, vramscope's own figure (offered for 16/32-bit
    float models only)."""
    llama_cpp: bool = False
    """The model on screen is a GGUF: llama.cpp's controls show and the answer is
    llama.cpp's load (`core.gguf_load`), not mlxcel's estimate. Set by the screen when a
    model read answers, never by a control."""
    gpu_layers: int = ALL_GPU_LAYERS
    """llama.cpp's `--n-gpu-layers`: layers offloaded from the last, the output layer
    first; `ALL_GPU_LAYERS` is "all" (`-1`)."""
    cache_type_k: KvCacheType = KvCacheType.F16
    """llama.cpp's `--cache-type-k`."""
    cache_type_v: KvCacheType = KvCacheType.F16
    """llama.cpp's `--cache-type-v` (a quantized V needs flash attention, as llama.cpp says)."""
    parallel: int = 1
    """llama.cpp's `--parallel`: sequences (server slots) decoded at once."""
    flash_attn: FlashAttn = FlashAttn.ON
    """llama.cpp's `--flash-attn on|off`."""
    ubatch_size: int = 512
    """llama.cpp's `--ubatch-size`: the compute buffer is reserved for it."""
    kv_unified: bool = False
    """llama.cpp's `--kv-unified`: one cache the sequences share, `--ctx-size` cells in all."""
    kv_offload: bool = True
    """False: llama.cpp's `--no-kv-offload`, the whole KV cache on the host."""
    swa_full: bool = False
    """llama.cpp's `--swa-full`: sliding-window layers hold the whole context."""

    def workload(self) -> Workload:
        """The estimate's workload."""
        return Workload(self.max_tokens, self.batch, self.kv_int8, self.quant)

    def question(self, device: Device, rank_available: tuple[int, ...] | None = None) -> Question:
        """The question this state asks of `device` (with `rank_available`: each rank's
        memory, from the Per device list)."""
        split = ONE_DEVICE
        if self.devices > 1:
            split = Split(self.split, self.devices, rank_available)
        return Question(
            workload=self.workload(),
            device=device,
            quantize_as=self.quantize_as,
            split=split,
            inflight_mib=self.inflight_mib,
            headroom_factor=self.headroom_factor,
            activation_mult=self.activation_mult,
        )

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
    backend: Backend | None = None
    """`--backend`: None for `auto`."""
    inflight_raw: str | None = None
    """`--inflight-mb`, parsed like `MLX_ROCM_MAX_INFLIGHT_MB`."""
    memory_limit: int | None = None
    memory_device: MemorySource | None = None
    """`--memory-limit free|total`: this device's free or total memory."""
    preset: str | None = None
    models_dirs: tuple[Path, ...] = ()
    llama_cpp: LlamaCppOptions | None = None
    """llama.cpp's flags for a GGUF (`explore FILE.gguf --n-gpu-layers 20 ...`), as
    `inspect` reads them; None: llama.cpp's defaults. They set the controls
    (`ExplorerState`'s fields of the same names)."""
    notes: tuple[str, ...] = ()
    """What a flag's value was taken to mean (`--flash-attn auto` counted as on), as
    `inspect` notes it; the explorer shows each once it starts."""


def initial_state(
    options: LaunchOptions, env: Mapping[str, str | None], machine: BackendChoice
) -> tuple[ExplorerState, tuple[str, ...]]:
    """The first state and any warnings about ignored environment values."""
    backend = start_backend(options, machine)
    resolved = resolve_settings(
        backend, env, inflight_flag=options.inflight_raw, available=_PENDING
    )
    if options.preset is not None:
        memory = MemoryChoice(options.preset)
    elif options.memory_device is not None:
        free = options.memory_device is MemorySource.DEVICE_FREE
        memory = MemoryChoice(DEVICE_FREE if free else DEVICE_TOTAL)
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
        backend=backend,
        memory=memory,
        backend_pinned=options.backend is not None,
    )
    if options.llama_cpp is not None:
        state = with_llama_cpp(state, options.llama_cpp)
    return state, resolved.warnings


def with_llama_cpp(state: ExplorerState, o: LlamaCppOptions) -> ExplorerState:
    """The state with llama.cpp's flags on its controls (`-ngl -1`: the slider's end,
    all); `tui.gguf.question.llama_options` reads them back."""
    return replace(
        state,
        gpu_layers=ALL_GPU_LAYERS if o.n_gpu_layers < 0 else o.n_gpu_layers,
        cache_type_k=o.cache_type_k,
        cache_type_v=o.cache_type_v,
        parallel=o.parallel,
        flash_attn=o.flash_attn,
        ubatch_size=o.ubatch_size,
        kv_unified=o.kv_unified,
        kv_offload=o.kv_offload,
        swa_full=o.swa_full,
    )


def with_memory(state: ExplorerState, choice: MemoryChoice) -> ExplorerState:
    """The state with another source of available memory: a preset also selects its
    device's backend (CUDA for an NVIDIA card, ROCm for an AMD one), unless `--backend`
    was given."""
    preset = PRESETS_BY_KEY.get(choice.key)
    if preset is None or state.backend_pinned:
        return replace(state, memory=choice)
    return replace(state, memory=choice, backend=preset.backend)


def shown_quantization(state: ExplorerState, what_ifs: Mapping[str, int | str]) -> Quantization:
    """The quantization the screen answers for: "Quantize as"'s, where its what-if has a
    number for this model; as stored otherwise (the control says why not)."""
    chosen = state.quantize_as
    return chosen if isinstance(what_ifs.get(chosen.word), int) else Quantization.STORED


def what_ifs_by_kind(what_ifs: Mapping[str, int | str]) -> dict[Quantization, int | str]:
    """The loader's what-ifs (by `--quantizations` word) by their kind."""
    return {Quantization.named(word): value for word, value in what_ifs.items()}


def explorer_request(state: ExplorerState, machine: BackendChoice) -> DeviceRequest:
    """The state as a device request: its backend is "auto" while it is the one the
    command line would pick by itself (the preset's, else this machine's), so the header
    names the same reason `inspect` does; any other is the user's choice."""
    auto = DeviceRequest(memory=state.memory.request())
    if not state.backend_pinned:
        picked, _, _ = resolve_backend(auto, MachineReadings(machine))
        if picked is state.backend:
            return auto
    return replace(auto, backend=state.backend, backend_words="chosen")


def explorer_device(state: ExplorerState, machine: MachineReadings) -> Device:
    """The device the screen answers for: `core.answer.device.resolve_device` over the
    state and the readings (DevicePending while one it needs is unread)."""
    return resolve_device(explorer_request(state, machine.detected), machine)


def start_backend(options: LaunchOptions, machine: BackendChoice) -> Backend:
    """The backend the explorer opens on: what `inspect` with the same flags picks."""
    preset = options.preset
    memory = MemoryRequest(MemorySource.PRESET, preset=preset) if preset else MemoryRequest()
    request = DeviceRequest(options.backend, memory=memory)
    return resolve_backend(request, MachineReadings(machine))[0]
