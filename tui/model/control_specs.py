"""One descriptor per explorer control: its field, label, stops or choices, flag, key,
palette entries and help line.

Everything that shows or sets a control reads its `ControlSpec`: the Controls panel
(tui/widgets/controls.py builds each row from it), the screen's key bindings and so
the footer (tui/screens/focus_keys.py), help (tui/screens/help_screen.py), the palette
(tui/screens/palette.py) and both command lines (tui/model/command_lines.py,
tui/model/split_words.py). A new control is a field of `ExplorerState` and one
`ControlSpec` in `CONTROLS` (and a widget kind, should it need a new one). Pure: no
Textual here.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.answer.quantization import Quantization
from core.backend import Backend
from core.estimate.available import MEMORY_LIMIT_ENV
from core.estimate.headroom import HEADROOM_FACTOR_ENV
from core.estimate.inflight import ROCM_MAX_INFLIGHT_ENV
from core.load.llama_cpp_flags import FlashAttn, KvCacheType
from core.measurement.engine import ENGINE_CHOICES, Engine
from core.parallel.sharding import ParallelKind
from tui.model.presets import DETECTED, DEVICE_FREE, DEVICE_TOTAL, PRESETS
from tui.model.scales import (
    BATCH_STOPS,
    FACTOR_STOPS,
    INFLIGHT_STOPS,
    PARALLEL_STOPS,
    UBATCH_STOPS,
    layer_stops,
    token_stops,
)
from tui.model.state import ExplorerState, MemoryChoice, with_memory
from tui.model.values import (
    BATCH,
    FACTOR,
    GPU_LAYERS,
    INFLIGHT,
    PARALLEL,
    TOKENS,
    UBATCH,
    ValueSpec,
    format_gpu_layers,
)


class WidgetKind(enum.Enum):
    """How a control is shown (each kind is one widget of tui/widgets)."""

    SLIDER = "slider"
    """`SliderField`: a slider over stops and a box for an exact value."""
    CHOICE = "choice"
    """`Segmented`: every choice on one line, the chosen one highlighted."""
    MEMORY = "memory"
    """`MemoryField`: the Available picker and its size box."""
    SIZES = "sizes"
    """A text box of sizes, one per device (`24GB,16GB`)."""


class KeyAction(enum.Enum):
    """What a control's key does."""

    JUMP = "jump"
    """Focus moves to the control (a priority binding: `t4096` lands in the field)."""
    CYCLE = "cycle"
    """The control moves to its next choice (wrapping)."""


@dataclass(frozen=True)
class Choice:
    """One value a control offers (a segment, or a palette entry of a slider's stop)."""

    value: Any
    """The field's value."""
    label: str
    """The option as the control shows it."""
    word: str
    """Its word on the command line (`int8`, `rocm`, `mlx-4bit`, `--pp`)."""
    palette: str = ""
    """Its words in the palette, after the control's name ("" = the label)."""
    palette_help: str = ""
    """The palette entry's help line ("" = the control's)."""


@dataclass(frozen=True)
class Flag:
    """How the command lines spell a control: vramscope's flag, mlxcel's flag or variable."""

    name: str = ""
    """vramscope's flag; "" where the value goes by the environment variable alone."""
    env: str = ""
    """The variable that carries it where the line takes no flag for it (mlxcel's)."""
    mlxcel: bool = False
    """`mlxcel inspect` takes the same flag."""
    always: bool = False
    """Written at its default too."""
    word: Callable[[Any], str] = str
    """A slider value's word (`repr` for a float mlxcel parses)."""
    switch: bool = False
    """A switch: the flag alone, written where the value is not the default
    (`--kv-unified`, `--no-kv-offload`)."""


_DEFAULTS = ExplorerState()


def _always(state: ExplorerState) -> bool:
    return True


def _inflight_reserved(state: ExplorerState) -> bool:
    return state.backend.has_inflight_reserve


@dataclass(frozen=True, kw_only=True)
class ControlSpec:
    """One explorer control, as every part of the explorer that shows or sets it reads it."""

    field: str
    """The `ExplorerState` field it sets."""
    id: str
    """Its widget's id, and where its jump key moves focus."""
    label: str
    """Its row's label; also its key's footer word and its help row."""
    kind: WidgetKind
    help: str
    """The help screen's line for it (under Controls)."""
    key: str = ""
    """The key that jumps to it or cycles it ("" = none)."""
    action: KeyAction | None = None
    key_help: str = ""
    """The help screen's line for a key that cycles (a jump's: "jump to LABEL")."""
    flag: Flag | None = None
    palette: str = ""
    """Its name in the palette ("" = the label): `Go to NAME (key)`, `NAME: choice`."""
    palette_note: str = ""
    """Words after its jump entry's title (`: MLXCEL_HEADROOM_FACTOR`)."""
    palette_values: str = ""
    """The name its choices' palette entries start with ("" = the palette name)."""
    palette_help: str = ""
    """The help line of its choices' palette entries."""
    tooltip: str = ""
    placeholder: str = ""
    """What an empty text box says (SIZES)."""
    stops: tuple[float, ...] = ()
    """A slider's stops."""
    values: ValueSpec | None = None
    """How a slider's box reads and writes a value."""
    cast: Callable[[float], Any] = int
    """A slider's value as the field holds it."""
    page: int = 4
    """Stops a page key moves a slider."""
    choices: tuple[Choice, ...] = ()
    """A CHOICE control's choices, in order; a slider's or the memory picker's palette
    entries."""
    row: str = ""
    """The id of the row it sits in ("" = a row of its own without one)."""
    joins_row: bool = False
    """It sits on the row of the control before it (no label of its own on screen)."""
    hint: bool = False
    """A line of words beside it (`#ID-hint`: why it is inactive, what it shows)."""
    split_only: bool = False
    """Its row shows with two devices or more only."""
    gguf_only: bool = False
    """llama.cpp's: shown (and its key live) only while the model on screen is a GGUF."""
    mlx_only: bool = False
    """mlxcel's or MLX's: hidden (and its key idle) while the model on screen is a GGUF,
    where mlxcel's estimate does not apply."""
    active: Callable[[ExplorerState], bool] = _always
    """Whether it counts for this state (else inactive on screen, left off the lines)."""
    inactive_why: str = ""
    """Why it is inactive where `active` says so: its hint, and the notice its key gives."""
    edit: Callable[[ExplorerState, Any], ExplorerState] | None = None
    """The state with a new value, where that is more than setting the field."""

    def value(self, state: ExplorerState) -> Any:
        """The field's value in `state`."""
        return getattr(state, self.field)

    def applies(self, state: ExplorerState) -> bool:
        """Whether it belongs to the model on screen: llama.cpp's controls to a GGUF,
        mlxcel's to a safetensors model, the others to both."""
        return not (self.gguf_only and not state.llama_cpp) and not (
            self.mlx_only and state.llama_cpp
        )

    @property
    def row_id(self) -> str:
        """The id of the row it sits in (its own row: `ID-row`)."""
        return self.row or f"{self.id}-row"

    @property
    def default(self) -> Any:
        """The field's default (what the command lines leave out)."""
        return getattr(_DEFAULTS, self.field)

    def with_value(self, state: ExplorerState, value: Any) -> ExplorerState:
        """`state` with this control set to `value`."""
        if self.edit is not None:
            return self.edit(state, value)
        return replace(state, **{self.field: value})

    def index(self, state: ExplorerState) -> int:
        """The position of the state's value among the choices."""
        return [c.value for c in self.choices].index(self.value(state))

    def choice(self, state: ExplorerState) -> Choice:
        """The state's choice."""
        return self.choices[self.index(state)]

    def next_value(self, state: ExplorerState) -> Any:
        """The choice after the state's (the last wraps to the first)."""
        return self.choices[(self.index(state) + 1) % len(self.choices)].value

    @property
    def palette_name(self) -> str:
        """Its name in the palette."""
        return self.palette or self.label

    @property
    def flags(self) -> tuple[str, ...]:
        """The CLI flags (or variable) it maps to."""
        if self.flag is None:
            return ()
        if self.flag.name:
            return (self.flag.name,)
        if self.flag.env:
            return (self.flag.env,)
        return tuple(c.word for c in self.choices)


def _stop_words(mib: float) -> str:
    return "off (0): unbounded, not modelled" if mib == 0 else f"{mib} MiB"


MAX_DEVICES = 8
DEVICE_CHOICES = tuple(range(1, MAX_DEVICES + 1))
BACKEND_ORDER: tuple[Backend, ...] = (Backend.ROCM, Backend.CUDA, Backend.METAL, Backend.CPU)
_QUANTIZE_LABELS = {
    Quantization.STORED: "as stored",
    Quantization.MLX_8BIT: "8-bit",
    Quantization.MLX_4BIT: "4-bit",
}
"""mlx-lm's affine quantization, group 64."""

MAX_TOKENS = ControlSpec(
    field="max_tokens",
    id="tokens",
    label="Max tokens",
    kind=WidgetKind.SLIDER,
    help="context, 256 to the trained context (log scale)",
    key="t",
    action=KeyAction.JUMP,
    flag=Flag("--max-tokens", mlxcel=True, always=True),
    tooltip="Context length (log scale); type an exact count, e.g. 5000, 32k or 1.5k",
    stops=token_stops(None),
    values=TOKENS,
)
INFLIGHT_MIB = ControlSpec(
    field="inflight_mib",
    id="inflight",
    label="In-flight MiB",
    kind=WidgetKind.SLIDER,
    help="MLX_ROCM_MAX_INFLIGHT_MB; 0 = off, not modelled",
    key="i",
    action=KeyAction.JUMP,
    flag=Flag("--inflight-mb", env=ROCM_MAX_INFLIGHT_ENV, always=True),
    palette_values="In-flight budget",
    palette_help="MLX_ROCM_MAX_INFLIGHT_MB",
    tooltip="MLX_ROCM_MAX_INFLIGHT_MB: transients ROCm may hold before the host waits",
    stops=INFLIGHT_STOPS,
    values=INFLIGHT,
    page=3,
    choices=tuple(Choice(mib, str(mib), str(mib), _stop_words(mib)) for mib in INFLIGHT_STOPS),
    active=_inflight_reserved,
    inactive_why="only ROCm builds reserve it",
    mlx_only=True,
)
BATCH_SIZE = ControlSpec(
    field="batch",
    id="batch",
    label="Batch",
    kind=WidgetKind.SLIDER,
    help="concurrent sequences; KV and activation scale",
    key="b",
    action=KeyAction.JUMP,
    flag=Flag("--batch", mlxcel=True),
    stops=BATCH_STOPS,
    values=BATCH,
    page=3,
    mlx_only=True,
)
KV_DTYPE = ControlSpec(
    field="kv_int8",
    id="kv",
    label="KV dtype",
    kind=WidgetKind.CHOICE,
    help="fp16, or int8: half the KV bytes",
    key="k",
    action=KeyAction.CYCLE,
    key_help="KV dtype: fp16 ⇄ int8",
    flag=Flag("--kv-cache-mode", mlxcel=True),
    choices=(
        Choice(False, "fp16", "fp16", palette_help="16-bit KV cache"),
        Choice(True, "int8", "int8", palette_help="8-bit KV cache"),
    ),
    mlx_only=True,
)
QUANTIZE = ControlSpec(
    field="quantize_as",
    id="quantize",
    label="Quantize as",
    kind=WidgetKind.CHOICE,
    help="vramscope's what-if: mlx-lm's 8/4-bit weights (16/32-bit models)",
    flag=Flag("--quantizations"),
    palette_help="vramscope's what-if of mlx_lm.convert -q (16/32-bit float models only)",
    tooltip="vramscope's what-if: the weights mlx_lm.convert -q would write (16/32-bit "
    "float models only); not an mlxcel figure",
    choices=tuple(Choice(q, _QUANTIZE_LABELS[q], q.word) for q in Quantization),
    row="quantize-row",
    hint=True,
    mlx_only=True,
)
OVERHEAD_FACTOR = ControlSpec(
    field="headroom_factor",
    id="factor",
    label="Overhead factor",
    kind=WidgetKind.SLIDER,
    help="MLXCEL_HEADROOM_FACTOR: overhead = (factor - 1) × (weights + KV)",
    key="h",
    action=KeyAction.JUMP,
    flag=Flag(env=HEADROOM_FACTOR_ENV, word=repr),
    palette_note=": MLXCEL_HEADROOM_FACTOR",
    tooltip="MLXCEL_HEADROOM_FACTOR: allocator overhead = (factor - 1) x (weights + KV)",
    stops=FACTOR_STOPS,
    values=FACTOR,
    cast=float,
    mlx_only=True,
)
BACKEND = ControlSpec(
    field="backend",
    id="backend",
    label="Backend",
    kind=WidgetKind.CHOICE,
    help="only ROCm builds add the in-flight reserve",
    key="n",
    action=KeyAction.CYCLE,
    key_help="next Backend: ROCm → CUDA → Metal → CPU",
    flag=Flag("--backend", always=True),
    palette_help="estimate for this backend (only ROCm reserves in-flight memory)",
    choices=tuple(Choice(b, b.label, b.value) for b in BACKEND_ORDER),
)
AVAILABLE = ControlSpec(
    field="memory",
    id="memory",
    label="Available",
    kind=WidgetKind.MEMORY,
    help="this machine, a device preset, or a typed size",
    key="a",
    action=KeyAction.JUMP,
    flag=Flag("--memory-limit", env=MEMORY_LIMIT_ENV),
    palette="Available memory",
    choices=(
        Choice(
            MemoryChoice(DETECTED),
            "This machine",
            "",
            "this machine",
            "what mlxcel would detect here",
        ),
        *(
            Choice(
                MemoryChoice(key),
                f"This device · {words}",
                words,
                f"this device's {words}",
                f"--memory-limit {words}: read from sysfs, NVML/nvidia-smi, MLX or /proc/meminfo",
            )
            for key, words in ((DEVICE_TOTAL, "total"), (DEVICE_FREE, "free"))
        ),
        *(Choice(MemoryChoice(p.key), p.label, p.key, p.label, p.source) for p in PRESETS),
    ),
    edit=with_memory,
)
DEVICES = ControlSpec(
    field="devices",
    id="devices",
    label="Devices",
    kind=WidgetKind.CHOICE,
    help="split the model over 2-8 devices (d)",
    key="d",
    action=KeyAction.CYCLE,
    key_help="Devices: 1 → 2 → … → 8 → 1 (two or more: TP/PP, Per device, ranks)",
    # No flag of its own: the count is the TP/PP flag's value (`--tp 4`).
    choices=tuple(
        Choice(
            n,
            str(n),
            str(n),
            palette_help="one device" if n == 1 else f"split the model over {n} devices (TP or PP)",
        )
        for n in DEVICE_CHOICES
    ),
    row="devices-row",
    split_only=True,
    mlx_only=True,
)
SPLIT = ControlSpec(
    field="split",
    id="split",
    label="TP/PP",
    kind=WidgetKind.CHOICE,
    help="tensor parallel (mlx-lm shard) or pipeline parallel (s)",
    key="s",
    action=KeyAction.CYCLE,
    key_help="TP/PP: tensor parallel ⇄ pipeline parallel",
    flag=Flag(),  # the choice's word is the flag: `--tp N`, `--pp N` (N: Devices)
    choices=(
        Choice(
            ParallelKind.TENSOR,
            "TP",
            "--tp",
            "TP, tensor parallel",
            "every rank holds a slice of every layer (mlx-lm shard)",
        ),
        Choice(
            ParallelKind.PIPELINE,
            "PP",
            "--pp",
            "PP, pipeline parallel",
            "each rank holds a run of whole layers (mlx-lm pipeline)",
        ),
    ),
    row="devices-row",
    joins_row=True,
    split_only=True,
    mlx_only=True,
)
PER_DEVICE = ControlSpec(
    field="device_memory",
    id="device-memory",
    label="Per device",
    kind=WidgetKind.SIZES,
    help="each device's available memory, in rank order: 24GB,16GB (p)",
    key="p",
    action=KeyAction.JUMP,
    key_help="jump to Per device (two devices or more)",
    flag=Flag("--memory-limit"),
    palette="Per device available memory",
    tooltip="Each device's available memory, in rank order (one size: all devices); "
    "blank: the Available value on every device",
    placeholder="blank: Available on each; or 24GB,16GB",
    row="device-memory-row",
    split_only=True,
    mlx_only=True,
)
MEASURE_WITH = ControlSpec(
    field="engine",
    id="engine",
    label="Measure with",
    kind=WidgetKind.CHOICE,
    help="torch (vramscope's engine), mlx (real MLX through mlx-lm) or your command (w)",
    key="w",
    action=KeyAction.CYCLE,
    key_help="Measure with: what m runs (torch → mlx → your command)",
    flag=Flag("--engine"),  # `vramscope measure`'s
    palette_help="what m measures with (torch: hip_backend; mlx: real MLX; your command)",
    # The two engines vramscope runs, then the user's own command (`vramscope run`): not
    # an engine `measure --engine` takes, so it is this control's, not ENGINE_CHOICES'.
    choices=(
        *(Choice(e, e.value, e.value) for e in ENGINE_CHOICES),
        Choice(
            Engine.EXTERNAL,
            Engine.EXTERNAL.spec.label,
            Engine.EXTERNAL.value,
            palette_help="m asks for your command, runs it and holds its peak beside the "
            "estimate (as vramscope run)",
        ),
    ),
    row="engine-row",
    mlx_only=True,
)

LAYERS_ON_GPU = ControlSpec(
    field="gpu_layers",
    id="gpu-layers",
    label="GPU layers",
    kind=WidgetKind.SLIDER,
    help="llama.cpp's --n-gpu-layers: 0 to n_layer + 1 (the output layer first), or all",
    key="g",
    action=KeyAction.JUMP,
    flag=Flag("--n-gpu-layers", word=format_gpu_layers),
    palette="Layers on the GPU",
    palette_note=": --n-gpu-layers",
    tooltip="llama.cpp's --n-gpu-layers: layers offloaded from the last, the output layer "
    "first; the rest stay on the host; type a count or all",
    stops=layer_stops(None),
    values=GPU_LAYERS,
    page=4,
    gguf_only=True,
)


CACHE_TYPES = (
    KvCacheType.F32,
    KvCacheType.F16,
    KvCacheType.BF16,
    KvCacheType.Q8_0,
    KvCacheType.Q4_0,
)
"""The cache types the K and V rows offer: the common ones, which fit the row at 80 columns
(`inspect -ctk` takes the others: q4_1, iq4_nl, q5_0, q5_1)."""


def _cache_types(flag: str) -> tuple[Choice, ...]:
    return tuple(
        Choice(t, t.value, t.value, palette_help=f"llama.cpp's {flag} {t.value}")
        for t in CACHE_TYPES
    )


CACHE_TYPE_K = ControlSpec(
    field="cache_type_k",
    id="cache-k",
    label="K cache",
    kind=WidgetKind.CHOICE,
    help="llama.cpp's --cache-type-k: f32, f16, bf16, q8_0, q4_0",
    key="K",
    action=KeyAction.CYCLE,
    key_help="K cache: the next --cache-type-k (f32 → f16 → bf16 → q8_0 → q4_0)",
    flag=Flag("--cache-type-k"),
    palette_help="llama.cpp's --cache-type-k",
    choices=_cache_types("--cache-type-k"),
    gguf_only=True,
)
CACHE_TYPE_V = ControlSpec(
    field="cache_type_v",
    id="cache-v",
    label="V cache",
    kind=WidgetKind.CHOICE,
    help="llama.cpp's --cache-type-v (a quantized V needs flash attention on)",
    key="V",
    action=KeyAction.CYCLE,
    key_help="V cache: the next --cache-type-v (f32 → f16 → bf16 → q8_0 → q4_0)",
    flag=Flag("--cache-type-v"),
    palette_help="llama.cpp's --cache-type-v",
    choices=_cache_types("--cache-type-v"),
    gguf_only=True,
)
PARALLEL_SLOTS = ControlSpec(
    field="parallel",
    id="parallel",
    label="Parallel",
    kind=WidgetKind.SLIDER,
    help="llama.cpp's --parallel: server slots, each its own KV stream and logits",
    key="P",
    action=KeyAction.JUMP,
    key_help="jump to Parallel (llama.cpp's --parallel)",
    flag=Flag("--parallel"),
    palette_note=": --parallel",
    tooltip="llama.cpp's --parallel: sequences decoded at once (server slots)",
    stops=PARALLEL_STOPS,
    values=PARALLEL,
    page=3,
    gguf_only=True,
)
FLASH_ATTENTION = ControlSpec(
    field="flash_attn",
    id="flash-attn",
    label="Flash attn",
    kind=WidgetKind.CHOICE,
    help="llama.cpp's --flash-attn on|off: the compute buffer, and V's layout",
    key="F",
    action=KeyAction.CYCLE,
    key_help="Flash attn: llama.cpp's --flash-attn on ⇄ off",
    flag=Flag("--flash-attn"),
    palette_help="llama.cpp's --flash-attn",
    choices=tuple(Choice(f, f.value, f.value) for f in FlashAttn),
    gguf_only=True,
)
UBATCH_SIZE = ControlSpec(
    field="ubatch_size",
    id="ubatch",
    label="Ubatch",
    kind=WidgetKind.SLIDER,
    help="llama.cpp's --ubatch-size: tokens per physical batch, which size the compute buffer",
    key="U",
    action=KeyAction.JUMP,
    key_help="jump to Ubatch (llama.cpp's --ubatch-size)",
    flag=Flag("--ubatch-size"),
    palette_note=": --ubatch-size",
    tooltip="llama.cpp's --ubatch-size (default 512): the compute buffer is reserved for a "
    "batch this size; --batch-size is kept at least as large",
    stops=UBATCH_STOPS,
    values=UBATCH,
    page=2,
    gguf_only=True,
)


def _switch(flag: str, off: str, on: str, value_on: bool = True) -> tuple[Choice, ...]:
    """A llama.cpp switch's two choices, llama.cpp's default first; `value_on` is the
    field's value when the flag is given."""
    return (
        Choice(not value_on, off, off, palette_help=f"llama.cpp without {flag}"),
        Choice(value_on, on, on, palette_help=f"llama.cpp's {flag}"),
    )


def _several_sequences(state: ExplorerState) -> bool:
    return state.parallel > 1


def _layers_on_device(state: ExplorerState) -> bool:
    return state.gpu_layers > 0


# llama.cpp's switches of the cache's layout share a row, each choice in words; the
# sliding-window one has its own (three did not fit the controls' width at 160x48).
KV_UNIFIED = ControlSpec(
    field="kv_unified",
    id="kv-unified",
    label="KV layout",
    kind=WidgetKind.CHOICE,
    help="llama.cpp's --kv-unified: one cache the slots share (--ctx-size cells in all), "
    "or a stream of --ctx-size / --parallel cells per slot",
    key="u",
    action=KeyAction.CYCLE,
    key_help="KV layout: a stream per slot ⇄ unified (llama.cpp's --kv-unified)",
    flag=Flag("--kv-unified", switch=True),
    palette="KV unified",
    palette_help="llama.cpp's --kv-unified",
    choices=_switch("--kv-unified", "per slot", "unified"),
    row="kv-layout-row",
    gguf_only=True,
    active=_several_sequences,
    inactive_why="one slot (--parallel 1): the same cache either way",
)
KV_OFFLOAD = ControlSpec(
    field="kv_offload",
    id="kv-offload",
    label="KV offload",
    kind=WidgetKind.CHOICE,
    help="where llama.cpp keeps the offloaded layers' cache: on the device, or on the host "
    "(--no-kv-offload)",
    key="O",
    action=KeyAction.CYCLE,
    key_help="KV offload: the cache on the device ⇄ on the host (llama.cpp's --no-kv-offload)",
    flag=Flag("--no-kv-offload", switch=True),
    palette_help="llama.cpp's KV offload (host: --no-kv-offload)",
    choices=_switch("--no-kv-offload", "device", "host", value_on=False),
    row="kv-layout-row",
    joins_row=True,
    gguf_only=True,
    active=_layers_on_device,
    inactive_why="no layer on the GPU: the cache is on the host either way",
)
SWA_FULL = ControlSpec(
    field="swa_full",
    id="swa-full",
    label="SWA layers",
    kind=WidgetKind.CHOICE,
    help="llama.cpp's --swa-full: sliding-window layers hold the whole context, not a window",
    key="W",
    action=KeyAction.CYCLE,
    key_help="SWA: a window ⇄ the whole context (llama.cpp's --swa-full)",
    flag=Flag("--swa-full", switch=True),
    palette_help="llama.cpp's --swa-full",
    choices=_switch("--swa-full", "window", "full"),
    gguf_only=True,
)

CONTROLS: tuple[ControlSpec, ...] = (
    MAX_TOKENS,
    LAYERS_ON_GPU,
    CACHE_TYPE_K,
    CACHE_TYPE_V,
    PARALLEL_SLOTS,
    FLASH_ATTENTION,
    UBATCH_SIZE,
    KV_UNIFIED,
    KV_OFFLOAD,
    SWA_FULL,
    INFLIGHT_MIB,
    BATCH_SIZE,
    KV_DTYPE,
    QUANTIZE,
    OVERHEAD_FACTOR,
    BACKEND,
    AVAILABLE,
    DEVICES,
    SPLIT,
    PER_DEVICE,
    MEASURE_WITH,
)
"""Every control, in the panel's order (top to bottom: also Tab's and help's)."""
BY_ID = {spec.id: spec for spec in CONTROLS}
BY_FIELD = {spec.field: spec for spec in CONTROLS}


def keyed(action: KeyAction) -> tuple[ControlSpec, ...]:
    """The controls whose key does `action`, in the panel's order."""
    return tuple(spec for spec in CONTROLS if spec.action is action)


def rows(specs: Sequence[ControlSpec] = CONTROLS) -> list[tuple[ControlSpec, ...]]:
    """The panel's rows: each control on its own, or with the ones that join its row."""
    found: list[tuple[ControlSpec, ...]] = []
    for spec in specs:
        if spec.joins_row and found:
            found[-1] = (*found[-1], spec)
        else:
            found.append((spec,))
    return found


def next_value(state: ExplorerState, name: str) -> object:
    """The value a cycling key moves a field to: the control's next choice (KV dtype,
    backend, devices, TP/PP, engine), or the other basis of the verdict (`v`, a view of
    the verdict rather than a control)."""
    spec = BY_FIELD.get(name)
    if spec is not None and spec.action is KeyAction.CYCLE:
        return spec.next_value(state)
    if name == "calibrated_verdict":
        return not state.calibrated_verdict
    raise ValueError(f"no cycling key for {name}")
