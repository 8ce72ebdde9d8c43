"""Peak memory of a run: torch's allocator on a GPU, the process's resident set on the CPU.

GPU (ROCm and CUDA): the headline is torch's peak of live tensor bytes, reset
before the load (the analogue of MLX's `get_peak_memory`, which also counts
active buffers only). Beside it: the allocator's reserved peak, and the rise in
device-level used memory sampled by a background thread (sysfs
`mem_info_vram_used` or amdsmi on ROCm, `cudaMemGetInfo` otherwise), which also
sees memory the allocator does not own.

CPU: the measuring process's peak resident set (VmHWM) over its resident set
just before the load; VmHWM is reset through /proc/self/clear_refs where the
kernel allows it, else a sampled RSS peak is used. Pages are only resident once
written, which is why synthetic weights are filled, never left empty.
"""

from __future__ import annotations

import glob
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

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


def status_kib(field: str) -> int | None:
    """A `/proc/self/status` field in KiB (VmRSS, VmHWM, VmSize), or None."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


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


def _sysfs_vram_reader(total_bytes: int | None) -> Callable[[], int | None] | None:
    """amdgpu's `mem_info_vram_used` of the card whose VRAM size matches the device."""
    cards = sorted(glob.glob("/sys/class/drm/card*/device/mem_info_vram_used"))
    chosen = None
    for used_path in cards:
        total_path = used_path.replace("vram_used", "vram_total")
        try:
            with open(total_path, encoding="ascii") as fh:
                total = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        if chosen is None or (total_bytes is not None and total == total_bytes):
            chosen = used_path

    if chosen is None:
        return None
    path = chosen

    def read() -> int | None:
        try:
            with open(path, encoding="ascii") as fh:
                return int(fh.read().strip())
        except (OSError, ValueError):
            return None

    return read


def _amdsmi_reader() -> Callable[[], int | None] | None:
    try:
        import amdsmi  # type: ignore[import-not-found]

        amdsmi.amdsmi_init()
        handle = amdsmi.amdsmi_get_processor_handles()[0]
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

    def __init__(self, device: torch.device, kind: str, total_bytes: int | None) -> None:
        self.device = device
        self.kind = kind
        self.total_bytes = total_bytes
        self._base_allocated = 0
        self._base_reserved = 0
        self._base_used = 0
        self._sampler: _Sampler | None = None
        self._source: str | None = None

    def _device_used_reader(self) -> tuple[Callable[[], int | None], str]:
        import torch

        if self.kind == "rocm":
            sysfs = _sysfs_vram_reader(self.total_bytes)
            if sysfs is not None and sysfs() is not None:
                return sysfs, "sysfs mem_info_vram_used"
            smi = _amdsmi_reader()
            if smi is not None:
                return smi, "amdsmi"

        def mem_get_info() -> int | None:
            try:
                free, total = torch.cuda.mem_get_info(self.device)
            except RuntimeError:
                return None
            return int(total - free)

        return mem_get_info, "hipMemGetInfo" if self.kind == "rocm" else "cudaMemGetInfo"

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
        self._sampler = _Sampler(read)
        self._sampler.start()

    def stop(self) -> PeakFigures:
        """Peaks over the baselines since `start()`."""
        import torch

        torch.cuda.synchronize(self.device)
        used = self._sampler.stop() if self._sampler is not None else 0
        allocated = int(torch.cuda.max_memory_allocated(self.device)) - self._base_allocated
        reserved = int(torch.cuda.max_memory_reserved(self.device)) - self._base_reserved
        return PeakFigures(
            peak_bytes=max(0, allocated),
            peak_kind="torch allocator peak of live tensors (reset before the load)",
            reserved_peak_bytes=max(0, reserved),
            device_used_delta_bytes=max(0, used - self._base_used) if used else None,
            device_used_source=self._source,
        )


def monitor_for(
    device: torch.device, kind: str, total_bytes: int | None
) -> CpuPeakMonitor | GpuPeakMonitor:
    """The monitor for a device."""
    if device.type == "cuda":
        return GpuPeakMonitor(device, kind, total_bytes)
    return CpuPeakMonitor()
