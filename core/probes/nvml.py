"""NVIDIA memory through NVML (`nvidia-ml-py`, the optional `nvidia` extra), no CUDA context.

`pynvml` is imported only when a CUDA device is read, so nothing else pays for it;
without it (or without a driver) the caller falls back to `nvidia-smi`.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

from core.display_text import clean_text


def _started_nvml() -> Any:
    """pynvml, initialised; None without the module or a driver (callers then say
    nothing, or `read_nvml`'s try nvidia-smi)."""
    try:
        nvml: Any = importlib.import_module("pynvml")
    except ImportError:
        return None
    try:
        nvml.nvmlInit()
    except Exception:  # NVMLError: no driver or library
        return None
    return nvml


def read_nvml(index: int = 0) -> tuple[str, int, int] | None:
    """GPU `index`'s (name, total bytes, used bytes) from NVML, or None (no module, no
    driver, no such GPU)."""
    nvml = _started_nvml()
    if nvml is None:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        name = nvml.nvmlDeviceGetName(handle)
        info = nvml.nvmlDeviceGetMemoryInfo(handle)
        total, used = int(info.total), int(info.used)
    except Exception:  # any NVMLError, or a reply of the wrong shape
        return None
    finally:
        with contextlib.suppress(Exception):  # a failed shutdown changes nothing read
            nvml.nvmlShutdown()
    if isinstance(name, bytes):  # older bindings return bytes
        name = name.decode("utf-8", "replace")
    if total <= 0 or used < 0:
        return None
    return clean_text(str(name)) or "NVIDIA GPU", total, used


def read_nvml_processes() -> dict[int, int] | None:
    """Every process's used device memory on every GPU, from NVML (bytes by pid, summed
    over GPUs; a process NVML lists without a figure counts 0), or None (no module, no
    driver). The caller picks its own processes and sees the others (the guard)."""
    nvml = _started_nvml()
    if nvml is None:
        return None
    used: dict[int, int] = {}
    try:
        for index in range(int(nvml.nvmlDeviceGetCount())):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            listed = list(nvml.nvmlDeviceGetComputeRunningProcesses(handle))
            listed += list(nvml.nvmlDeviceGetGraphicsRunningProcesses(handle))
            for proc in listed:
                figure = getattr(proc, "usedGpuMemory", None)
                pid = int(proc.pid)
                used[pid] = used.get(pid, 0) + (figure if isinstance(figure, int) else 0)
    except Exception:  # any NVMLError, or a reply of the wrong shape
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
    return used
