"""The one resolution of the device a question is asked for, shared by every surface.

`inspect`, `fit`, the explorer and the Fits view all turn what the user asked for (a
`DeviceRequest`: a backend or "auto", and where the available memory comes from)
and what the probes found on this machine (`MachineReadings`) into one `Device`,
here, so they never disagree about the backend or the budget, and every surface can
say which device it answered for (`Device.words`: `cpu (no GPU found)`).

The backend: the one asked for; else a preset's device's (an NVIDIA card CUDA, an AMD
one ROCm, Apple silicon Metal); else this machine's by its device nodes, which is the
CPU where no GPU is found (as an mlxcel built for this machine would estimate). Pure:
the readings are taken by the caller.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.answer.presets import PRESETS_BY_KEY
from core.backend import Backend, BackendChoice
from core.estimate.available import AvailableMemory
from core.kind import Kind
from core.units import format_bytes_short

if TYPE_CHECKING:
    from core.device_memory import DeviceMemory


class MemorySource(Kind):
    """Where the available memory comes from."""

    DETECTED = "detected"
    """mlxcel's own walk: MLXCEL_MEMORY_LIMIT, the device's MLX limit, /proc/meminfo."""
    PRESET = "preset"
    SIZE = "size"
    """A size the user gave (`--memory-limit 24GB`, a typed size)."""
    DEVICE_TOTAL = "total"
    DEVICE_FREE = "free"
    """This device's total or free memory, read (`--memory-limit total|free`)."""


def device_memory_choice(text: str) -> MemorySource | None:
    """`--memory-limit free|total` as its source (case and spaces aside); None for any
    other text (a size, or nothing)."""
    try:
        chosen = MemorySource.named(text.strip().lower())
    except ValueError:
        return None  # a size, or nothing
    return chosen if chosen in (MemorySource.DEVICE_FREE, MemorySource.DEVICE_TOTAL) else None


@dataclass(frozen=True)
class MemoryRequest:
    """The available memory asked for."""

    source: MemorySource = MemorySource.DETECTED
    preset: str | None = None
    """The preset key, for `PRESET`."""
    size: int = 0
    """The bytes, for `SIZE`."""
    size_words: str = "--memory-limit"
    """Where the size came from, for its source line."""


@dataclass(frozen=True)
class DeviceRequest:
    """What the user asked for: a backend (None: auto) and the available memory."""

    backend: Backend | None = None
    backend_words: str = "--backend"
    """How the backend was given (`--backend`, `chosen`), for the reason."""
    memory: MemoryRequest = MemoryRequest()


@dataclass(frozen=True)
class MachineReadings:
    """What the probes found on this machine (None where not read, or not yet)."""

    detected: BackendChoice
    """This machine's backend by its device nodes."""
    available: AvailableMemory | None = None
    """mlxcel's walk for the resolved backend (`MemorySource.DETECTED`)."""
    device: DeviceMemory | None = None
    """The device's reading (total, used, name, gfx target), where it was read."""


class BackendBasis(enum.Enum):
    """Why the backend is the one it is (its short word in the header)."""

    ASKED = "chosen"
    PRESET = "preset"
    DETECTED = "detected"
    NO_GPU = "no GPU found"


@dataclass(frozen=True)
class Device:
    """The device a question is for: backend, identity, available memory and its source."""

    backend: Backend
    backend_reason: str
    """Why this backend: `no GPU found`, `/dev/kfd (AMD KFD) present`, `--backend`,
    `the Radeon RX 7900 XTX 24 GiB preset`."""
    available: AvailableMemory
    name: str | None = None
    """The device named (a preset's card, the card read), else None."""
    target: str | None = None
    """Its gfx target (`gfx1151`): the device a calibration must be for; None: unnamed."""
    memory: MemorySource = MemorySource.DETECTED
    reading: DeviceMemory | None = None
    """The device's reading behind `--memory-limit free|total` (its line and JSON)."""
    basis: BackendBasis = BackendBasis.ASKED

    @property
    def words(self) -> str:
        """`cpu (no GPU found)`: the backend and why."""
        return f"{self.backend.value} ({self.backend_reason})"

    @property
    def line(self) -> str:
        """`Backend: cpu (no GPU found); available 22.40 GiB (/proc/meminfo)`."""
        named = f" {self.name}" if self.name else ""
        return (
            f"Backend: {self.words};{named} available {format_bytes_short(self.available.bytes)}"
            f" ({self.available.source})"
        )

    def json(self) -> dict[str, Any]:
        """vramscope's `device` object (beside mlxcel's keys, never in place of one)."""
        return {
            "backend": self.backend.value,
            "backend_reason": self.backend_reason,
            "backend_basis": self.basis.name.lower(),
            "name": self.name,
            "target": self.target,
            "available_bytes": self.available.bytes,
            "available_source": self.available.source,
            "memory_limit": self.memory.value,
            "reading": None if self.reading is None else self.reading.json(),
        }


class DevicePending(Exception):
    """The device cannot be resolved yet: a reading it needs has not answered."""


def resolve_backend(
    request: DeviceRequest, machine: MachineReadings
) -> tuple[Backend, BackendBasis, str]:
    """The backend, its basis and why in words: asked for, else a preset's device's,
    else this machine's (the CPU where no GPU is found)."""
    if request.backend is not None:
        return request.backend, BackendBasis.ASKED, request.backend_words
    preset = PRESETS_BY_KEY.get(request.memory.preset or "")
    if request.memory.source is MemorySource.PRESET and preset is not None:
        return preset.backend, BackendBasis.PRESET, f"the {preset.label} preset"
    detected = machine.detected
    if detected.backend is Backend.CPU:
        return Backend.CPU, BackendBasis.NO_GPU, "no GPU found"
    return detected.backend, BackendBasis.DETECTED, f"detected: {detected.reason}"


def resolve_device(request: DeviceRequest, machine: MachineReadings) -> Device:
    """The device of a question (DevicePending while a reading it needs is unread:
    the caller says why it never came, when it did not)."""
    backend, basis, reason = resolve_backend(request, machine)
    memory = request.memory
    here = backend is machine.detected.backend and machine.device is not None
    reading = machine.device if here else None
    name = reading.device if reading is not None else None
    target = reading.target if reading is not None else None
    if memory.source is MemorySource.PRESET:
        preset = PRESETS_BY_KEY[memory.preset or ""]
        return Device(
            backend, reason, preset.available(), preset.label, preset.gfx, memory.source,
            basis=basis,
        )  # fmt: skip
    if memory.source is MemorySource.SIZE:
        available = AvailableMemory(memory.size, memory.size_words)
        return Device(backend, reason, available, name, target, memory.source, basis=basis)
    if memory.source in (MemorySource.DEVICE_TOTAL, MemorySource.DEVICE_FREE):
        from core.device.memory import device_budget
        from core.device_memory import Budget

        if machine.device is None:
            raise DevicePending("this device's memory is being read")
        which = Budget.FREE if memory.source is MemorySource.DEVICE_FREE else Budget.TOTAL
        available = device_budget(which, machine.device)
        device = machine.device
        return Device(
            backend, reason, available, device.device, device.target, memory.source, device, basis
        )
    if machine.available is None:
        raise DevicePending("available memory is being detected")
    return Device(backend, reason, machine.available, name, target, memory.source, basis=basis)
