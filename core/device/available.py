"""mlxcel's available-memory rule (`core.estimate.available`) fed with this machine's
probes: the VRAM total from amdgpu sysfs (ROCm) or nvidia-smi (CUDA), Apple unified
memory, /proc/meminfo (under `core.device.reading.PROC_ROOT`, so tests hide or replace
it). When nothing gives a figure, the result says why (`AvailableMemory.unread`)."""

from __future__ import annotations

from dataclasses import replace

from core.backend import Backend
from core.device import reading
from core.device_memory import DeviceMemory
from core.estimate.available import AvailableMemory, resolve_available_memory
from core.probes.amdgpu_sysfs import read_amdgpu_vram
from core.probes.meminfo import meminfo_fault, read_meminfo
from core.probes.nvidia_smi import query_nvidia_smi
from core.probes.sysctl import read_unified_memory_gib


def probe_device_memory(backend: Backend) -> DeviceMemory | None:
    """The device mlxcel's rule reads for a GPU backend (the largest amdgpu VRAM, or
    GPU 0 through nvidia-smi), or None (CPU, Metal or nothing readable)."""
    if backend is Backend.ROCM:
        vram = read_amdgpu_vram()
        if vram is None:
            return None
        how = "amdgpu sysfs: mem_info_vram_total, mem_info_vram_used"
        return DeviceMemory(
            vram.name, vram.total_bytes, vram.used_bytes, how, 0.8, pool_name="VRAM"
        )
    if backend is Backend.CUDA:
        found = query_nvidia_smi()  # GPU 0 through NVML's CLI: no CUDA context
        if found is None:
            return None
        name, total, used = found
        return DeviceMemory(name, total, used, "nvidia-smi (GPU 0)", 0.8, pool_name="VRAM")
    return None


def read_available_memory(
    backend: Backend, *, cli_limit: int | None = None, env_limit: str | None = None
) -> AvailableMemory:
    """`resolve_available_memory` on this machine: each probe runs only when needed."""
    meminfo = reading.PROC_ROOT / "meminfo"  # looked up now: tests may set the root
    found = resolve_available_memory(
        backend,
        cli_limit=cli_limit,
        env_limit=env_limit,
        device_probe=probe_device_memory,
        unified_probe=read_unified_memory_gib,
        meminfo_probe=lambda: read_meminfo(meminfo),
    )
    if found.unread is None:
        return found
    why = meminfo_fault(meminfo) or f"{meminfo} gave no figure"
    return replace(found, unread=f"no device limit, unified memory or memory reading: {why}")
