"""mlxcel's available-memory rule (`core.estimate.available`) fed with this machine's
probes: the VRAM total from amdgpu sysfs (ROCm) or nvidia-smi (CUDA), Apple unified
memory, /proc/meminfo (under `core.device.reading.PROC_ROOT`, so tests hide or replace
it). When nothing gives a figure, the result says why (`AvailableMemory.unread`)."""

from __future__ import annotations

from dataclasses import replace

from core.backend import Backend
from core.device import reading
from core.estimate.available import AvailableMemory, DeviceMemory, resolve_available_memory
from core.probes.amdgpu_sysfs import read_amdgpu_vram
from core.probes.meminfo import meminfo_fault, read_meminfo
from core.probes.nvidia_smi import query_nvidia_smi
from core.probes.sysctl import read_unified_memory_gib


def probe_device_memory(backend: Backend) -> DeviceMemory | None:
    """The device size for a GPU backend, or None (CPU, Metal or nothing readable)."""
    if backend is Backend.ROCM:
        vram = read_amdgpu_vram()
        return None if vram is None else DeviceMemory(vram.total_bytes, vram.name)
    if backend is Backend.CUDA:
        found = query_nvidia_smi()  # GPU 0 through NVML's CLI: no CUDA context
        return None if found is None else DeviceMemory(found[1], found[0])
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
