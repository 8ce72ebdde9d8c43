"""What each engine records beside the common fields of a result, typed.

`MeasuredPeak.extra` is the JSON object these are written as (history lines, the
child's result line, `--json`); its encoding is theirs: `to_extra()` writes the keys
in the order a run has always written them, and `from_extra()` reads any record,
old ones included (a key a record lacks takes its default, one this version does not
know is left in `extra`). The engine's spec names its type
(`core.measurement.engine.EngineSpec.fields`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from core.kind import Kind, KindError
from core.load.llama_cpp_log import LlamaCppBufferKind
from core.load.load import Placement
from core.measurement.command_flags import EngineFamily
from core.parallel.sharding import ParallelKind


class QueueEmulation(Kind):
    """Whether a torch run emulated MLX-ROCm's in-flight queue (its value is the record's
    word, `--emulate`'s choice)."""

    ROCM = "rocm"
    NONE = "none"


def _emulation(value: object) -> QueueEmulation:
    """The emulation a record's word names; a record without one emulated the queue
    (the choice came later), one with a word this version does not know did not."""
    if value is None:
        return QueueEmulation.ROCM
    try:
        return QueueEmulation.named(value)
    except KindError:
        return QueueEmulation.NONE


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _ints(value: Any) -> list[int]:
    return [v for v in value if _int(v) is not None] if isinstance(value, list) else []


def _engine_family(value: Any) -> EngineFamily:
    try:
        return EngineFamily.named(value)
    except KindError:
        return EngineFamily.OTHER


def _parallel(value: Any) -> ParallelKind | None:
    try:
        return ParallelKind.named(value)
    except KindError:
        return None


def _texts(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


@dataclass(frozen=True)
class EngineFields:
    """Shared encoding of the typed fields: dataclass fields in key order."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset()
    """Keys written only when set (None is left out, not written as null)."""

    def to_extra(self) -> dict[str, Any]:
        """The JSON object of `MeasuredPeak.extra`."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in self.OPTIONAL:
                continue
            out[f.name] = value.value if isinstance(value, enum.Enum) else value
        return out


@dataclass(frozen=True)
class TorchFields(EngineFields):
    """The torch engine's own readings: its emulated queue, its kernels, the device."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {"drm_vram_delta_bytes", "drm_gtt_delta_bytes", "pci_bus_id", "allocator_settings"}
    )

    inflight_emulation: QueueEmulation = QueueEmulation.ROCM
    """`rocm` (MLX-ROCm's queue emulated) or `none`; records from before the choice
    existed always emulated it."""
    inflight_commits: int | None = None
    inflight_waits: int | None = None
    inflight_max_committed_bytes: int | None = None
    inflight_max_held_bytes: int | None = None
    ops: int | None = None
    fused_bf16_modules: int | None = None
    attention: str | None = None
    """The attention the run ran (`mlx-fallback`, `torch-sdpa`); None in records from
    before the choice existed."""
    sdpa_backend: dict[str, str] = field(default_factory=dict)
    """The SDPA kernel torch picked per call shape (fused attention only)."""
    generated_tokens: list[int] = field(default_factory=list)
    """The first greedy tokens of the measured pass."""
    drm_vram_delta_bytes: int | None = None
    """This process's amdgpu DRM VRAM rise (ROCm, from fdinfo)."""
    drm_gtt_delta_bytes: int | None = None
    """This process's amdgpu DRM GTT rise (ROCm, from fdinfo)."""
    pci_bus_id: str | None = None
    """The GPU's PCI bus id, when known."""
    allocator_settings: dict[str, str] | None = None
    """PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF, when set."""

    @property
    def emulated_queue(self) -> bool:
        """True when the run emulated MLX-ROCm's in-flight queue."""
        return self.inflight_emulation is QueueEmulation.ROCM

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any]) -> TorchFields:
        """The fields of a record (any record: a missing key takes its default)."""
        attention = extra.get("attention")
        settings = extra.get("allocator_settings")
        return cls(
            inflight_emulation=_emulation(extra.get("inflight_emulation")),
            inflight_commits=_int(extra.get("inflight_commits")),
            inflight_waits=_int(extra.get("inflight_waits")),
            inflight_max_committed_bytes=_int(extra.get("inflight_max_committed_bytes")),
            inflight_max_held_bytes=_int(extra.get("inflight_max_held_bytes")),
            ops=_int(extra.get("ops")),
            fused_bf16_modules=_int(extra.get("fused_bf16_modules")),
            attention=str(attention) if attention else None,
            sdpa_backend=_texts(extra.get("sdpa_backend")),
            generated_tokens=_ints(extra.get("generated_tokens")),
            drm_vram_delta_bytes=_int(extra.get("drm_vram_delta_bytes")),
            drm_gtt_delta_bytes=_int(extra.get("drm_gtt_delta_bytes")),
            pci_bus_id=_str(extra.get("pci_bus_id")),
            allocator_settings=_texts(settings) if isinstance(settings, dict) else None,
        )


@dataclass(frozen=True)
class MlxFields(EngineFields):
    """The mlx engine's own readings of a single-device run."""

    generated_tokens: list[int] = field(default_factory=list)
    """The first greedy tokens of the measured pass."""
    mlx_memory_limit_bytes: int | None = None
    """mx.get_memory_limit() during the run."""

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any]) -> MlxFields:
        """The fields of a record (any record: a missing key takes its default)."""
        return cls(
            generated_tokens=_ints(extra.get("generated_tokens")),
            mlx_memory_limit_bytes=_int(extra.get("mlx_memory_limit_bytes")),
        )


@dataclass(frozen=True)
class RankFields(EngineFields):
    """One rank of a split MLX load (hip_backend/ranks), or the single run beside it."""

    parallel: ParallelKind | None = None
    """How the load was split (written `tp` or `pp`); None for the single-device run a
    split is compared with."""
    rank: int | None = None
    ranks: int | None = None
    """The group's size (1 for the single run)."""
    layers: list[int] | None = None
    """[start, end) of the rank's layers under PP; None otherwise."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Where the rank's time went: import, join, load, workload."""

    KEY: ClassVar[str] = "rank"
    """The key that tells a rank's record from a single-device mlx run's."""

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any]) -> RankFields:
        """The fields of a record (any record: a missing key takes its default)."""
        layers = extra.get("layers")
        seconds = extra.get("seconds")
        return cls(
            parallel=_parallel(extra.get("parallel")),
            rank=_int(extra.get("rank")),
            ranks=_int(extra.get("ranks")),
            layers=_ints(layers) if isinstance(layers, list) else None,
            seconds=(
                {str(k): float(v) for k, v in seconds.items() if isinstance(v, int | float)}
                if isinstance(seconds, dict)
                else {}
            ),
        )


class ExternalFigure(Kind):
    """What an external command's headline peak is (the record's word)."""

    DEVICE = "device"
    """Device memory of its processes: amdgpu VRAM + GTT (fdinfo), or NVML's figure."""
    HOST = "host"
    """Host resident memory of its processes (no device figure was read)."""


def _figure(value: Any) -> ExternalFigure:
    try:
        return ExternalFigure.named(value)
    except KindError:
        return ExternalFigure.HOST


@dataclass(frozen=True)
class LlamaCppBuffer:
    """One buffer kind at one place of a llama.cpp run (#40): what llama.cpp's own log
    printed, beside vramscope's load for the command's flags."""

    kind: LlamaCppBufferKind
    place: Placement
    """Where it lives: on the device or the host."""
    llama_cpp_bytes: int | None
    """None: llama.cpp printed no such buffer there (or its log was not read)."""
    vramscope_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "placement": self.place.value,
            "llama_cpp_bytes": self.llama_cpp_bytes,
            "vramscope_bytes": self.vramscope_bytes,
        }

    @classmethod
    def read(cls, value: Any) -> LlamaCppBuffer | None:
        """One recorded buffer, or None for anything else."""
        if not isinstance(value, Mapping):
            return None
        ours = _int(value.get("vramscope_bytes"))
        try:  # a word this version does not know: not a buffer it can read
            kind = LlamaCppBufferKind.named(value.get("kind"))
            place = Placement.named(value.get("placement"))
        except KindError:
            return None
        if ours is None:
            return None
        return cls(kind, place, _int(value.get("llama_cpp_bytes")), ours)


def _arch(value: Any) -> str | None:
    """An architecture's name as recorded (a hand-edited line's is kept short)."""
    return value[:64] if isinstance(value, str) and value else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _buffers(value: Any) -> tuple[LlamaCppBuffer, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(b for v in value[:64] if (b := LlamaCppBuffer.read(v)) is not None)


@dataclass(frozen=True)
class ExternalFields(EngineFields):
    """What `vramscope run -- CMD` read of the user's command."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {
            "device_peak_bytes",
            "drm_vram_peak_bytes",
            "drm_gtt_peak_bytes",
            "card_used_delta_bytes",
            "nvml_peak_bytes",
            "exit_signal",
            "maxrss_bytes",
            "cgroup_peak_bytes",
            "llama_cpp_buffers",
            "llama_cpp_arch",
            "llama_cpp_flash_attn",
        }
    )

    command: str = ""
    """The command line as run (control characters stripped)."""
    family: EngineFamily = EngineFamily.OTHER
    """Whose command line it is (a word this version does not know reads as `other`)."""
    figure: ExternalFigure = ExternalFigure.HOST
    exit_status: int | None = None
    host_peak_bytes: int | None = None
    """The largest sum of the processes' VmHWM seen at one sample."""
    host_rss_peak_bytes: int | None = None
    """The largest sum of the processes' VmRSS seen at one sample."""
    device_peak_bytes: int | None = None
    """The device figure (VRAM + GTT of their DRM clients, or NVML's), when read."""
    drm_vram_peak_bytes: int | None = None
    drm_gtt_peak_bytes: int | None = None
    card_used_delta_bytes: int | None = None
    """The card's own used-memory rise (sysfs VRAM + GTT): other processes count."""
    nvml_peak_bytes: int | None = None
    interval_s: float = 0.25
    samples: int = 0
    wall_seconds: float = 0.0
    other_gpu_processes: list[int] = field(default_factory=list)
    """Processes outside the command seen using the GPU during the run (the guard)."""
    exit_signal: int | None = None
    """The signal that ended the command, when one did (`exit_status` is then 128 + N)."""
    maxrss_bytes: int | None = None
    """The command's own `ru_maxrss` (`wait4`), when above the holder's pages."""
    cgroup_peak_bytes: int | None = None
    """The run's cgroup v2 `memory.peak`, where the memory controller gave one."""
    followed_by: str = ""
    """How the command's processes were found: a cgroup v2, or the environment marker
    (empty in records from before both)."""
    llama_cpp_buffers: tuple[LlamaCppBuffer, ...] | None = None
    """A llama.cpp command's buffers, from its `--log-file`, beside vramscope's load
    (None: not a llama.cpp command, or no load sized; records from before #40)."""
    llama_cpp_arch: str | None = None
    """The GGUF's `general.architecture` the load was sized for (what `calibrate
    --engine llama.cpp` fits the compute term per); None as for the buffers."""
    llama_cpp_flash_attn: bool | None = None
    """Whether the load counted flash attention (`-fa`): its compute buffer differs."""

    def to_extra(self) -> dict[str, Any]:
        """The JSON object of `MeasuredPeak.extra` (the buffers as objects)."""
        out = super().to_extra()
        if self.llama_cpp_buffers is not None:
            out["llama_cpp_buffers"] = [b.to_json() for b in self.llama_cpp_buffers]
        return out

    @property
    def completed(self) -> bool:
        """Whether the command ended well: exit status 0 (or not recorded, in records
        from before it was)."""
        return self.exit_status in (None, 0)

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any]) -> ExternalFields:
        """The fields of a record (any record: a missing key takes its default)."""
        interval = extra.get("interval_s")
        wall = extra.get("wall_seconds")
        return cls(
            command=_str(extra.get("command")) or "",
            family=_engine_family(extra.get("family")),
            figure=_figure(extra.get("figure")),
            exit_status=_int(extra.get("exit_status")),
            host_peak_bytes=_int(extra.get("host_peak_bytes")),
            host_rss_peak_bytes=_int(extra.get("host_rss_peak_bytes")),
            device_peak_bytes=_int(extra.get("device_peak_bytes")),
            drm_vram_peak_bytes=_int(extra.get("drm_vram_peak_bytes")),
            drm_gtt_peak_bytes=_int(extra.get("drm_gtt_peak_bytes")),
            card_used_delta_bytes=_int(extra.get("card_used_delta_bytes")),
            nvml_peak_bytes=_int(extra.get("nvml_peak_bytes")),
            interval_s=float(interval) if isinstance(interval, int | float) else 0.25,
            samples=_int(extra.get("samples")) or 0,
            wall_seconds=float(wall) if isinstance(wall, int | float) else 0.0,
            other_gpu_processes=_ints(extra.get("other_gpu_processes")),
            exit_signal=_int(extra.get("exit_signal")),
            maxrss_bytes=_int(extra.get("maxrss_bytes")),
            cgroup_peak_bytes=_int(extra.get("cgroup_peak_bytes")),
            followed_by=_str(extra.get("followed_by")) or "",
            llama_cpp_buffers=_buffers(extra.get("llama_cpp_buffers")),
            llama_cpp_arch=_arch(extra.get("llama_cpp_arch")),
            llama_cpp_flash_attn=_bool(extra.get("llama_cpp_flash_attn")),
        )


RunFields = TorchFields | MlxFields | RankFields | ExternalFields
"""The typed fields of any engine's result."""
