"""What an MLX run holds from the system, beside MLX's own peak (issue #21, item 5).

`mx.get_peak_memory()` is the high-water mark of MLX's *active* buffers; freed buffers
stay in MLX's buffer cache and are still the process's memory (mlx issue 3896: 46 GB
reported against 110 GB of footprint). MLX has no peak counter for active + cache, so
it is sampled: after the load, after every prefill chunk (mlx-lm calls the progress
callback before it clears the cache) and at every decoded token (before mlx-lm's
periodic clear). Between two `mx.clear_cache()` calls active + cache never falls (a
freed buffer goes to the cache), so a sample just before each clear sees that
interval's largest value, which is at least MLX's peak within it.

The process's OS figure: on the CPU the kernel's own high-water mark of resident
memory, VmHWM in /proc/self/status, read once at the end; on ROCm this process's
amdgpu memory (VRAM + GTT from DRM fdinfo), sampled at the same points; elsewhere
none is recorded. mlx is imported inside the functions only (the measuring child).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.backend import Backend
from hip_backend.host import status_kib

VM_HWM_SOURCE = "VmHWM (/proc/self/status), the process's resident high-water mark"
DRM_SOURCE = "amdgpu DRM fdinfo (VRAM + GTT) of this process, sampled at each step"


@dataclass(frozen=True)
class OsPeak:
    """The process's OS-level peak and where it came from."""

    bytes: int
    source: str


class Footprint:
    """Running peaks of MLX's active + cache and, on ROCm, of this process's DRM memory."""

    def __init__(self, device_kind: Backend) -> None:
        self.device_kind = device_kind
        self.held_peak = 0
        self.drm_peak: int | None = None
        self.samples = 0

    def sample(self) -> None:
        """Read MLX's active + cache now (and the DRM memory on ROCm); keep the largest."""
        import mlx.core as mx

        held = int(mx.get_active_memory()) + int(mx.get_cache_memory())
        self.held_peak = max(self.held_peak, held)
        self.samples += 1
        if self.device_kind is Backend.ROCM:
            from hip_backend.torch_engine.gpu_memory import read_process_drm_memory

            drm = read_process_drm_memory()
            if drm is not None:
                self.drm_peak = max(self.drm_peak or 0, drm.total_bytes)

    def os_peak(self) -> OsPeak | None:
        """The OS figure of the run (None where this device has none)."""
        if self.device_kind is Backend.CPU:
            kib = status_kib("VmHWM")
            return OsPeak(kib * 1024, VM_HWM_SOURCE) if kib is not None else None
        if self.device_kind is Backend.ROCM and self.drm_peak is not None:
            return OsPeak(self.drm_peak, DRM_SOURCE)
        return None
