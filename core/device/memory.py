"""The device's real memory: total, used by others and free, read without a GPU runtime.

- AMD: amdgpu sysfs per card (`/sys/class/drm/cardN/device/mem_info_vram_total`,
  `_used`, `mem_info_vis_vram_*`, `mem_info_gtt_*`), the card's name
  (`product_name`) and gfx target from the KFD topology (`gfx_target_version`,
  matched to the card by its render node). A KFD node with CPU cores and SIMDs is
  an APU (gfx1151-class unified memory): HIP allocates it from both the VRAM
  carve-out and GTT (system memory), so the pool vramscope counts is the larger of
  the two; discrete cards count VRAM.
- NVIDIA: NVML through `nvidia-ml-py` when installed (`core.device.nvml`), else
  `nvidia-smi --query-gpu=memory.total,memory.used` (no CUDA context either way).
- Metal, and a GPU none of those can read: MLX's own `mx.device_info()` and
  `mx.get_memory_limit()`, asked in a child interpreter (`core.device.mlx_device`).
- CPU and anything else: `/proc/meminfo` (`MemTotal`, `MemAvailable`).

`--memory-limit total` is MLX's limit on that pool (80% of total, as MLX's allocators
set it, or MLX's own figure when MLX was asked); `--memory-limit free` is the smaller
of that limit and what is free now. On the CPU, total is `MemTotal` and free is
`MemAvailable`. Every reader takes a root folder (default `SYS_ROOT`, `PROC_ROOT`)
so tests run on recorded trees; a missing or unreadable file is a note.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.backend import Backend
from core.device.mlx_device import MlxDevice, read_mlx_device
from core.device.nvml import read_nvml
from core.errors import UsageError
from core.estimate.available import AvailableMemory, mlx_device_limit, query_nvidia_smi
from core.units import format_bytes_short, sat_sub

MEMORY_CHOICES = ("free", "total")
SYS_ROOT = Path("/sys")
PROC_ROOT = Path("/proc")


@dataclass(frozen=True)
class PoolReading:
    """One memory pool: what it holds and what is in use."""

    total: int
    used: int

    @property
    def free(self) -> int:
        """Total less used (0 when used reads above total)."""
        return sat_sub(self.total, self.used)


@dataclass(frozen=True)
class CardMemory:
    """One amdgpu card's memory, as sysfs reports it."""

    card: str
    """`card0`, ..."""
    name: str | None
    gfx_target: str | None
    apu: bool
    vram: PoolReading | None
    vis_vram: PoolReading | None
    gtt: PoolReading | None

    @property
    def pool(self) -> PoolReading | None:
        """The pool the device allocates from: VRAM, or on an APU the larger of VRAM and GTT."""
        gtt_larger = self.gtt is not None and (
            self.vram is None or self.gtt.total > self.vram.total
        )
        return self.gtt if self.apu and gtt_larger else self.vram

    @property
    def label(self) -> str:
        """`card1 (Radeon RX 7900 XTX, gfx1100)`."""
        parts = [p for p in (self.name, self.gfx_target) if p]
        return f"{self.card} ({', '.join(parts)})" if parts else self.card

    @property
    def pool_words(self) -> str:
        """Which pool `pool` is, in words."""
        if self.apu and self.pool is self.gtt:
            return "GTT (APU: larger than the VRAM carve-out)"
        if self.apu:
            return "VRAM carve-out (APU: larger than GTT)"
        return "VRAM"


@dataclass(frozen=True)
class DeviceMemory:
    """What `--memory-limit free|total` reads: one device's pool, with its account."""

    device: str
    total: int
    used: int
    how: str
    limit_fraction: float | None
    """MLX's limit as a fraction of total (0.8 on GPUs), or None (the CPU: none)."""
    notes: tuple[str, ...] = field(default=())
    mlx_limit: int | None = None
    """MLX's own limit (`mx.get_memory_limit()`) when MLX was asked; beats the fraction."""
    target: str | None = None
    """The card's gfx target (`gfx1151`, from the KFD topology), where it was read: the
    device a calibration must be for."""

    @property
    def line(self) -> str:
        """`Device: card1 (...): total 24.00 GiB, used by others 1.50 GiB, free 22.50 GiB (how)`."""
        return (
            f"Device: {self.device}: total {format_bytes_short(self.total)}, "
            f"used by others {format_bytes_short(self.used)}, "
            f"free {format_bytes_short(self.free)} ({self.how})"
        )

    def json(self) -> dict[str, object]:
        """vramscope's `device` JSON object (beside mlxcel's keys, never in place of one)."""
        return {
            "name": self.device,
            "total_bytes": self.total,
            "used_bytes": self.used,
            "free_bytes": self.free,
            "limit_bytes": self.limit,
            "how": self.how,
        }

    @property
    def limit(self) -> int:
        """The most MLX lets this device hold: its own figure, 80% on GPUs, else total."""
        if self.mlx_limit is not None:
            return min(self.mlx_limit, self.total)
        return mlx_device_limit(self.total) if self.limit_fraction else self.total

    @property
    def free(self) -> int:
        """Total less used."""
        return sat_sub(self.total, self.used)


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isascii() and text.isdigit() else None


def _pool(device: Path, stem: str) -> PoolReading | None:
    total = _read_int(device / f"mem_info_{stem}_total")
    used = _read_int(device / f"mem_info_{stem}_used")
    if total is None:
        return None
    return PoolReading(total, used or 0)


def gfx_target(version: int) -> str:
    """KFD's `gfx_target_version` (110501) as a gfx name (`gfx1151`)."""
    major, minor, step = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor:x}{step:x}"


def read_kfd_nodes(root: Path) -> dict[int, tuple[str | None, bool]]:
    """Render minor -> (gfx target, is an APU) for every GPU node of the KFD topology."""
    nodes = root / "class" / "kfd" / "kfd" / "topology" / "nodes"
    out: dict[int, tuple[str | None, bool]] = {}
    try:
        entries = sorted(os.listdir(nodes))
    except OSError:
        return out
    for entry in entries:
        try:
            text = (nodes / entry / "properties").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        props: dict[str, int] = {}
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                props[key] = int(value.strip())
        if not props.get("simd_count") or "drm_render_minor" not in props:
            continue  # a CPU-only node
        version = props.get("gfx_target_version")
        out[props["drm_render_minor"]] = (
            gfx_target(version) if version else None,
            props.get("cpu_cores_count", 0) > 0,
        )
    return out


def _render_minor(device: Path) -> int | None:
    try:
        names = os.listdir(device / "drm")
    except OSError:
        return None
    for name in names:
        if name.startswith("renderD") and name[7:].isdigit():
            return int(name[7:])
    return None


def read_amdgpu_cards(root: Path = Path("/sys")) -> list[CardMemory]:
    """Every amdgpu card under `root/class/drm` that reports its VRAM size."""
    drm = root / "class" / "drm"
    try:
        cards = sorted(n for n in os.listdir(drm) if n.startswith("card") and n[4:].isdigit())
    except OSError:
        return []
    kfd = read_kfd_nodes(root)
    out: list[CardMemory] = []
    for card in cards:
        device = drm / card / "device"
        vram = _pool(device, "vram")
        if vram is None:
            continue  # not an amdgpu card (or its memory files are unreadable)
        try:
            name = (device / "product_name").read_text(errors="replace").strip() or None
        except OSError:
            name = None
        minor = _render_minor(device)
        target, apu = kfd.get(minor, (None, False)) if minor is not None else (None, False)
        out.append(
            CardMemory(
                card, name, target, apu, vram, _pool(device, "vis_vram"), _pool(device, "gtt")
            )
        )
    return out


def read_meminfo_pool(path: Path = Path("/proc/meminfo")) -> PoolReading | None:
    """`MemTotal` and `MemTotal - MemAvailable` from /proc/meminfo, in bytes."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            values[key] = int(fields[0]) * 1024
    total = values.get("MemTotal")
    if not total:
        return None
    available = values.get("MemAvailable", total)
    return PoolReading(total, sat_sub(total, available))


def read_cpu_name(proc_root: Path | None = None) -> str:
    """The CPU's model name (`/proc/cpuinfo`), else what `platform` knows: the CPU
    device's name, and the device a calibration of its runs is for."""
    import platform

    try:
        with open((proc_root or PROC_ROOT) / "cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


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
    )


def _gpu_reading(backend: Backend, sys_root: Path, notes: list[str]) -> DeviceMemory | None:
    """The GPU's pool from sysfs (ROCm) or NVML / nvidia-smi (CUDA), else None (a note)."""
    if backend is Backend.ROCM:
        cards = [c for c in read_amdgpu_cards(sys_root) if c.pool is not None]
        if cards:
            best = max(cards, key=lambda c: c.pool.total if c.pool else 0)
            pool = best.pool
            assert pool is not None
            how = f"amdgpu sysfs {best.card}: {best.pool_words}"
            return DeviceMemory(best.label, pool.total, pool.used, how, 0.8, target=best.gfx_target)
        notes.append(f"no amdgpu card reports its memory in {sys_root / 'class' / 'drm'}")
    if backend is Backend.CUDA:
        nvml = read_nvml()
        if nvml is not None:
            name, total, used = nvml
            return DeviceMemory(name, total, used, "NVML (GPU 0)", 0.8)
        found = read_nvidia_pool()
        if found is not None:
            name, pool = found
            return DeviceMemory(name, pool.total, pool.used, "nvidia-smi (GPU 0)", 0.8)
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
    reading = _gpu_reading(backend, sys_root or SYS_ROOT, notes)
    wants_gpu = backend is not Backend.CPU
    answer = (mlx or read_mlx_device)()  # looked up now: tests may set the module's
    if answer is not None and answer.is_gpu != wants_gpu:
        kind = "a GPU" if answer.is_gpu else "the CPU"
        notes.append(f"MLX's default device is {kind} ({answer.device}): not {backend.label}'s")
        answer = None
    if reading is None and answer is not None and wants_gpu:
        return _from_mlx(answer, notes)
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


def device_budget(which: str, device: DeviceMemory) -> AvailableMemory:
    """`free` or `total` of a device read, as the estimate's available memory."""
    limit = device.limit
    if device.mlx_limit is not None:
        capped = "MLX's own limit"
    else:
        capped = "MLX's 80% limit" if device.limit_fraction else ""
    if which == "total":
        value = limit
        source = f"total of {device.device}" + (f" ({capped})" if capped else "")
    else:
        value = min(device.free, limit)
        source = (
            f"free on {device.device}: {format_bytes_short(device.free)} of "
            f"{format_bytes_short(device.total)}, {format_bytes_short(device.used)} in use"
            + (f", capped at {capped}" if capped and value == limit else "")
        )
    return AvailableMemory(value, f"{source}; {device.how}")


def device_available(
    which: str,
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
            f"{which}: no device memory is readable (no amdgpu sysfs, NVML, nvidia-smi, "
            f"MLX or {(proc_root or PROC_ROOT) / 'meminfo'}); give a size instead",
        )
    return device_budget(which, device), device
