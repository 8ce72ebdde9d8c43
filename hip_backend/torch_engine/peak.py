"""Peak memory of a run: torch's allocator on a GPU, the process's resident set on the CPU.

GPU (ROCm and CUDA): the headline is torch's peak of live tensor bytes, reset
before the load (the analogue of MLX's `get_peak_memory`, which also counts
active buffers only). Beside it: the allocator's reserved peak, and the rise in
device-level used memory sampled by a background thread, which also sees memory
the allocator does not own. On ROCm that is this process's own VRAM + GTT from its
DRM fdinfo (`gpu_memory.py`; GTT matters on unified-memory APUs), else the
device-wide `mem_info_vram_used` of the card with the device's PCI bus id, else
amdsmi's reading of that bus id; `cudaMemGetInfo`/`hipMemGetInfo` (device-wide,
other processes included) is the last resort and the CUDA reading.

CPU: the measuring process's peak resident set (VmHWM) over its resident set
just before the load; VmHWM is reset through /proc/self/clear_refs where the
kernel allows it, else a sampled RSS peak is used. Pages are only resident once
written, which is why synthetic weights are filled, never left empty.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from core.backend import Backend
from hip_backend.host import status_kib
from hip_backend.torch_engine.gpu_memory import (
    normalize_bus_id,
    pick_card,
    read_int_file,
    read_process_drm_memory,
)

if TYPE_CHECKING:
    import torch

SAMPLE_INTERVAL_S = 0.002


@dataclass(frozen=True)
class PeakFigures:
    """What a monitor reports at the end of a run (bytes over the pre-load baseline)."""

    peak_bytes: int
    peak_kind: str
    reserved_peak_bytes: int | None = None
    device_used_delta_bytes: int | None = None
    device_used_source: str | None = None
    extra: dict[str, int | str] = field(default_factory=dict)
    """Further readings (this process's DRM VRAM and GTT peaks, the card picked)."""


class _Sampler(threading.Thread):
    """Polls a reading and keeps its maximum."""

    def __init__(self, read: Callable[[], int | None]) -> None:
        super().__init__(daemon=True, name="vramscope-peak-sampler")
        self._read = read
        self._stop_event = threading.Event()
        self.maximum = 0

    def sample(self) -> None:
        value = self._read()
        if value is not None and value > self.maximum:
            self.maximum = value

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.sample()
            self._stop_event.wait(SAMPLE_INTERVAL_S)

    def stop(self) -> int:
        self._stop_event.set()
        self.join(timeout=2.0)
        self.sample()
        return self.maximum


def current_rss() -> int | None:
    """Resident bytes of this process (Linux), else None."""
    kib = status_kib("VmRSS")
    return None if kib is None else kib * 1024


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")  # 5 = reset the peak RSS to the current RSS
    except OSError:
        return False
    return True


class CpuPeakMonitor:
    """VmHWM (or sampled RSS) over the resident set at `start()`."""

    def __init__(self) -> None:
        self.baseline = 0
        self._hwm_reset = False
        self._sampler: _Sampler | None = None

    def start(self) -> None:
        """Take the baseline just before the load."""
        self.baseline = current_rss() or 0
        self._hwm_reset = _reset_hwm()
        if not self._hwm_reset:  # the kernel keeps the exact peak; poll only without it
            self._sampler = _Sampler(current_rss)
            self._sampler.start()

    def stop(self) -> PeakFigures:
        """Peak over the baseline since `start()`."""
        sampled = self._sampler.stop() if self._sampler is not None else 0
        hwm_kib = status_kib("VmHWM")
        if self._hwm_reset and hwm_kib is not None:
            peak = max(hwm_kib * 1024, sampled)
            kind = "peak resident memory of the measuring process over its baseline (VmHWM)"
        else:
            peak = sampled
            kind = "sampled resident memory of the measuring process over its baseline"
        return PeakFigures(max(0, peak - self.baseline), kind)


def _sysfs_vram_reader(card: Path) -> Callable[[], int | None]:
    """amdgpu's device-wide `mem_info_vram_used` of one card."""
    path = card / "mem_info_vram_used"
    return lambda: read_int_file(path)


def _fdinfo_reader(bus_id: str | None) -> Callable[[], int | None]:
    """This process's own VRAM + GTT on the device, from its DRM fdinfo."""

    def read() -> int | None:
        memory = read_process_drm_memory(bus_id=bus_id)
        return None if memory is None else memory.total_bytes

    return read


def _amdsmi_reader(bus_id: str | None) -> Callable[[], int | None] | None:
    """amdsmi's device-wide VRAM use of the handle with `bus_id` (none matched: None)."""
    try:
        import amdsmi  # type: ignore[import-not-found]

        amdsmi.amdsmi_init()
        handles = amdsmi.amdsmi_get_processor_handles()
        handle = next(
            (
                h
                for h in handles
                if bus_id is None
                or normalize_bus_id(str(amdsmi.amdsmi_get_gpu_device_bdf(h)))
                == normalize_bus_id(bus_id)
            ),
            None,
        )
        if handle is None or (bus_id is None and len(handles) != 1):
            return None  # never read another GPU's memory
        amdsmi.amdsmi_get_gpu_vram_usage(handle)
    except Exception:  # optional tool; any failure means "not available"
        return None

    def read() -> int | None:
        try:
            return int(amdsmi.amdsmi_get_gpu_vram_usage(handle)["vram_used"]) << 20
        except Exception:
            return None

    return read


class GpuPeakMonitor:
    """torch allocator peaks plus a sampled device-level used-memory rise."""

    def __init__(
        self,
        device: torch.device,
        kind: Backend,
        total_bytes: int | None,
        bus_id: str | None = None,
        index: int = 0,
    ) -> None:
        self.device = device
        self.kind = kind
        self.total_bytes = total_bytes
        self.bus_id = bus_id
        self.index = index
        self._base_allocated = 0
        self._base_reserved = 0
        self._base_used = 0
        self._sampler: _Sampler | None = None
        self._source: str | None = None
        self._drm_base: tuple[int, int] | None = None
        self._drm_peak = [0, 0]

    def _device_used_reader(self) -> tuple[Callable[[], int | None], str]:
        """The most specific reading there is: this process's own DRM memory (fdinfo),
        else the card's device-wide VRAM (sysfs, amdsmi), else the runtime's
        device-wide free/total, which also counts other processes."""
        import torch

        if self.kind is Backend.ROCM:
            own = _fdinfo_reader(self.bus_id)
            if own() is not None:
                return own, "fdinfo drm-memory-vram + drm-memory-gtt of this process"
            card = pick_card(self.bus_id, self.index, dict(os.environ))
            if card is not None:
                return _sysfs_vram_reader(card[0]), f"sysfs mem_info_vram_used ({card[1]})"
            smi = _amdsmi_reader(self.bus_id)
            if smi is not None:
                return smi, "amdsmi vram_used"

        def mem_get_info() -> int | None:
            try:
                free, total = torch.cuda.mem_get_info(self.device)
            except RuntimeError:
                return None
            return int(total - free)

        return mem_get_info, "hipMemGetInfo" if self.kind is Backend.ROCM else "cudaMemGetInfo"

    def start(self) -> None:
        """Reset torch's peaks and take the device baseline just before the load."""
        import torch

        torch.cuda.synchronize(self.device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(self.device)
        self._base_allocated = int(torch.cuda.memory_allocated(self.device))
        self._base_reserved = int(torch.cuda.memory_reserved(self.device))
        read, self._source = self._device_used_reader()
        self._base_used = read() or 0
        drm = read_process_drm_memory(bus_id=self.bus_id) if self.kind is Backend.ROCM else None
        if drm is not None:
            self._drm_base = (drm.vram_bytes, drm.gtt_bytes)

            def read_and_split() -> int | None:
                memory = read_process_drm_memory(bus_id=self.bus_id)
                if memory is None:
                    return None
                self._drm_peak[0] = max(self._drm_peak[0], memory.vram_bytes)
                self._drm_peak[1] = max(self._drm_peak[1], memory.gtt_bytes)
                return memory.total_bytes

            if self._source is not None and self._source.startswith("fdinfo"):
                read = read_and_split
        self._sampler = _Sampler(read)
        self._sampler.start()

    def stop(self) -> PeakFigures:
        """Peaks over the baselines since `start()`."""
        import torch

        torch.cuda.synchronize(self.device)
        used = self._sampler.stop() if self._sampler is not None else 0
        allocated = int(torch.cuda.max_memory_allocated(self.device)) - self._base_allocated
        reserved = int(torch.cuda.max_memory_reserved(self.device)) - self._base_reserved
        extra: dict[str, int | str] = {}
        if self._drm_base is not None:
            extra["drm_vram_delta_bytes"] = max(0, self._drm_peak[0] - self._drm_base[0])
            extra["drm_gtt_delta_bytes"] = max(0, self._drm_peak[1] - self._drm_base[1])
        if self.bus_id is not None:
            extra["pci_bus_id"] = self.bus_id
        return PeakFigures(
            peak_bytes=max(0, allocated),
            peak_kind="torch allocator peak of live tensors (reset before the load)",
            reserved_peak_bytes=max(0, reserved),
            device_used_delta_bytes=max(0, used - self._base_used) if used else None,
            device_used_source=self._source,
            extra=extra,
        )


def monitor_for(
    device: torch.device,
    kind: Backend,
    total_bytes: int | None,
    bus_id: str | None = None,
    index: int = 0,
) -> CpuPeakMonitor | GpuPeakMonitor:
    """The monitor for a device."""
    if device.type == "cuda":
        return GpuPeakMonitor(device, kind, total_bytes, bus_id, index)
    return CpuPeakMonitor()
