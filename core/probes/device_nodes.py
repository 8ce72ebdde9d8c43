"""Which GPU backend this machine has, from device nodes and platform facts.

mlxcel decides at compile time (`--features rocm`); vramscope takes the backend as an
explicit input, and `detect_backend` only looks at `/dev/kfd`, `/dev/nvidiactl`,
`/proc/driver/nvidia/version` and the platform: it never imports torch or initialises
HIP, CUDA or Metal.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable
from pathlib import Path

from core.backend import Backend, BackendChoice


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
