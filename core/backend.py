"""Which GPU backend the estimate is for, and how to tell without starting a runtime.

mlxcel decides at compile time (`--features rocm`); vramscope takes the backend as
an explicit input. `detect_backend` only looks at device nodes and platform
facts: it never imports torch or initialises HIP, CUDA or Metal.
"""

from __future__ import annotations

import enum
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class Backend(enum.Enum):
    """The backends mlxcel builds for."""

    ROCM = "rocm"
    CUDA = "cuda"
    METAL = "metal"
    CPU = "cpu"

    @property
    def label(self) -> str:
        """Display name."""
        return {"rocm": "ROCm", "cuda": "CUDA", "metal": "Metal", "cpu": "CPU"}[self.value]

    @property
    def has_inflight_reserve(self) -> bool:
        """Only ROCm builds reserve the in-flight budget."""
        return self is Backend.ROCM


BACKEND_CHOICES = ("auto", "rocm", "cuda", "metal", "cpu")


@dataclass(frozen=True)
class BackendChoice:
    """A backend and whether it was detected on this machine or chosen."""

    backend: Backend
    detected: bool
    reason: str


def detect_backend(
    exists: Callable[[str], bool] | None = None,
    system: str | None = None,
    machine: str | None = None,
) -> BackendChoice:
    """The backend of this machine from device nodes; CPU when no GPU is visible."""
    exists = exists or (lambda p: Path(p).exists())
    system = system or sys.platform
    machine = machine or platform.machine()
    if system == "darwin" and machine in ("arm64", "aarch64"):
        return BackendChoice(Backend.METAL, True, "Apple Silicon")
    if exists("/dev/kfd"):
        return BackendChoice(Backend.ROCM, True, "/dev/kfd (AMD KFD) present")
    if exists("/dev/nvidiactl") or exists("/proc/driver/nvidia/version"):
        return BackendChoice(Backend.CUDA, True, "NVIDIA driver present")
    return BackendChoice(Backend.CPU, True, "no GPU device node found")


def resolve_backend(
    name: str, detect: Callable[[], BackendChoice] = detect_backend
) -> BackendChoice:
    """`auto` detects; any other name is taken as chosen."""
    if name == "auto":
        return detect()
    return BackendChoice(Backend(name), False, "chosen")
