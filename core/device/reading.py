"""Reading the device's memory through the probes (core/probes), without a GPU runtime.

- AMD: amdgpu sysfs per card (`core.probes.amdgpu_sysfs`). A KFD node with CPU cores
  and SIMDs is an APU (gfx1151-class unified memory): HIP allocates it from both the
  VRAM carve-out and GTT (system memory), so the pool vramscope counts is the larger
  of the two, and its free memory is also held against `MemAvailable` and the TTM
  limit (`core.probes.ttm`; `core.device.memory` does the arithmetic); discrete cards
  count VRAM.
- NVIDIA: NVML through `nvidia-ml-py` when installed (`core.probes.nvml`), else
  `nvidia-smi --query-gpu=memory.total,memory.used` (no CUDA context either way).
- Metal, and a GPU none of those can read: MLX's own `mx.device_info()` and
  `mx.get_memory_limit()`, asked in a child interpreter (`core.probes.mlx_device`).
- CPU and anything else: `/proc/meminfo` (`MemTotal`, `MemAvailable`). Never for
  CUDA or ROCm: a GPU that cannot be read (none there) is no reading (`unread_words`
  says what was not found and where it looked), not the host's RAM under the GPU's
  name.

Every reader takes a root folder (default `SYS_ROOT`, `PROC_ROOT`) so tests run on
recorded trees; a missing or unreadable file is a note.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from core.backend import Backend
from core.device.memory import device_budget
from core.device_memory import Budget, DeviceMemory
from core.errors import UsageError
from core.estimate.available import AvailableMemory
from core.probes.amdgpu_sysfs import read_amdgpu_cards
from core.probes.cpuinfo import read_cpu_name
from core.probes.meminfo import read_meminfo_pool
from core.probes.mlx_device import MlxDevice, read_mlx_device
from core.probes.nvidia_smi import query_nvidia_smi
from core.probes.nvml import read_nvml
from core.probes.pool import PoolReading
from core.probes.ttm import read_ttm_limit

SYS_ROOT = Path("/sys")
PROC_ROOT = Path("/proc")


def read_nvidia_pool(timeout: float = 2.0) -> tuple[str, PoolReading] | None:
    """GPU 0's name and memory from `nvidia-smi`, or None."""
    found = query_nvidia_smi(timeout)
    return None if found is None else (found[0], PoolReading(found[1], found[2]))


def _from_mlx(found: MlxDevice, notes: list[str]) -> DeviceMemory:
    total = found.memory_size or found.memory_limit
    notes = [*notes, "MLX reports no other process's use of its device: free = total"]
    return DeviceMemory(
        f"{found.name} ({found.device})" if found.device else found.name,
        total,
        0,
        "MLX in a child process: mx.device_info(), mx.get_memory_limit()",
        None,
        tuple(notes),
        found.memory_limit,
    )


def _from_meminfo(proc: Path, notes: list[str]) -> DeviceMemory | None:
    pool = read_meminfo_pool(proc / "meminfo")
    if pool is None:
        return None
    return DeviceMemory(
        "system memory",
        pool.total,
        pool.used,
        "/proc/meminfo: MemTotal, used = MemTotal - MemAvailable",
        None,
        tuple(notes),
        target=read_cpu_name(proc),
        pool_name="memory",
    )


def _amdgpu_reading(sys_root: Path, proc_root: Path) -> DeviceMemory | None:
    """The amdgpu card with the largest pool; an APU's with `MemAvailable` and the TTM
    limit beside it (its pool is system memory)."""
    cards = [c for c in read_amdgpu_cards(sys_root) if c.pool is not None]
    if not cards:
        return None
    best = max(cards, key=lambda c: c.pool.total if c.pool else 0)
    pool = best.pool
    assert pool is not None
    how = f"amdgpu sysfs {best.card}: {best.pool_words}"
    name = "GTT" if best.apu and pool is best.gtt else "VRAM"
    device = DeviceMemory(
        best.label, pool.total, pool.used, how, 0.8, target=best.gfx_target, pool_name=name
    )
    if not best.apu:
        return device
    host = read_meminfo_pool(proc_root / "meminfo")
    ttm = read_ttm_limit(sys_root)
    return replace(
        device,
        host_available=None if host is None else host.free,
        ttm_limit=None if ttm is None else ttm.bytes,
    )


def _gpu_reading(
    backend: Backend, sys_root: Path, notes: list[str], proc_root: Path | None = None
) -> DeviceMemory | None:
    """The GPU's pool from sysfs (ROCm) or NVML / nvidia-smi (CUDA), else None (a note)."""
    if backend is Backend.ROCM:
        card = _amdgpu_reading(sys_root, proc_root or PROC_ROOT)
        if card is not None:
            return card
        notes.append(f"no amdgpu card reports its memory in {sys_root / 'class' / 'drm'}")
    if backend is Backend.CUDA:
        nvml = read_nvml()
        if nvml is not None:
            name, total, used = nvml
            return DeviceMemory(name, total, used, "NVML (GPU 0)", 0.8, pool_name="VRAM")
        found = read_nvidia_pool()
        if found is not None:
            name, pool = found
            how = "nvidia-smi (GPU 0)"
            return DeviceMemory(name, pool.total, pool.used, how, 0.8, pool_name="VRAM")
        notes.append("neither NVML (pip install 'vramscope[nvidia]') nor nvidia-smi answered")
    return None


def read_card(backend: Backend, *, sys_root: Path | None = None) -> DeviceMemory | None:
    """The device's own reading (its name, target, pool) without asking MLX: amdgpu
    sysfs on ROCm, NVML or nvidia-smi on CUDA, /proc/meminfo and the CPU's name on the
    CPU; None elsewhere or when none answers."""
    if backend is Backend.CPU:
        return _from_meminfo(PROC_ROOT, [])
    return _gpu_reading(backend, sys_root or SYS_ROOT, [])


def read_device_memory(
    backend: Backend,
    *,
    sys_root: Path | None = None,
    proc_root: Path | None = None,
    mlx: Callable[[], MlxDevice | None] | None = None,
) -> DeviceMemory | None:
    """The memory the backend's device allocates from; None when nothing is readable.

    Where mlx is installed, its own answer (a child process) is a further source:
    MLX's allocator limit caps the pool read here (it is what mlxcel's detection
    takes first), and on Metal, or a GPU nothing else can read, MLX gives the pool.
    An MLX whose default device is not the backend's kind (a CPU-only build asked
    for ROCm) is left out, with a note.
    """
    notes: list[str] = []
    reading = _gpu_reading(backend, sys_root or SYS_ROOT, notes, proc_root)
    wants_gpu = backend is not Backend.CPU
    answer = (mlx or read_mlx_device)()  # looked up now: tests may set the module's
    if answer is not None and answer.is_gpu != wants_gpu:
        kind = "a GPU" if answer.is_gpu else "the CPU"
        notes.append(f"MLX's default device is {kind} ({answer.device}): not {backend.label}'s")
        answer = None
    if reading is None and answer is not None and wants_gpu:
        return _from_mlx(answer, notes)
    if reading is None and backend in (Backend.CUDA, Backend.ROCM):
        return None  # the host's RAM is not the GPU's budget
    if reading is None:
        reading = _from_meminfo(proc_root or PROC_ROOT, [])
    if reading is None:
        return None
    if answer is not None:
        reading = replace(
            reading,
            mlx_limit=answer.memory_limit,
            how=f"{reading.how}; limit: MLX's own mx.get_memory_limit() (child process)",
        )
    return replace(reading, notes=(*reading.notes, *notes))


def unread_words(
    backend: Backend, proc_root: Path | None = None, sys_root: Path | None = None
) -> str:
    """Why `read_device_memory(backend)` gave nothing, in words: what was not found and
    where it was looked for."""
    if backend is Backend.CUDA:
        return (
            "the CUDA device cannot be read (neither NVML, pip install 'vramscope[nvidia]', "
            "nor nvidia-smi answered: no NVIDIA GPU here?)"
        )
    if backend is Backend.ROCM:
        drm = (sys_root or SYS_ROOT) / "class" / "drm"
        return (
            f"no AMD GPU found (no amdgpu card reports its memory in {drm}, and MLX has no "
            "GPU device)"
        )
    return (
        f"no device memory is readable (no amdgpu sysfs, NVML, nvidia-smi, MLX or "
        f"{(proc_root or PROC_ROOT) / 'meminfo'})"
    )


def device_available(
    which: Budget,
    backend: Backend,
    *,
    sys_root: Path | None = None,
    proc_root: Path | None = None,
    mlx: Callable[[], MlxDevice | None] | None = None,
) -> tuple[AvailableMemory, DeviceMemory]:
    """`--memory-limit free|total` as the estimate's available memory (UsageError if unread)."""
    device = read_device_memory(backend, sys_root=sys_root, proc_root=proc_root, mlx=mlx)
    if device is None:
        raise UsageError(
            "--memory-limit",
            f"{which}: {unread_words(backend, proc_root, sys_root)}; give a size instead",
        )
    return device_budget(which, device), device
