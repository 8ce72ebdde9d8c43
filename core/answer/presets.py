"""Available-memory choices: this machine's detected budget, device presets, or a typed size.

A GPU preset is the limit MLX itself would use on that device (80% of its
memory, `core.estimate.available.mlx_device_limit`), which is what mlxcel compares the
total against; on gfx1151 with 96 GiB of VRAM that is the 76.80 GiB of
mlxcel's worked example. Apple presets are the unified memory size, mlxcel's
`hw.memsize` step.

Each preset also names its device's backend (an NVIDIA card CUDA, an AMD card ROCm,
Apple silicon Metal): `--preset` selects it unless `--backend` is given, so
`--preset rtx4090` no longer keeps ROCm's 1 GiB in-flight reserve.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.backend import Backend
from core.estimate.available import AvailableMemory, mlx_device_limit
from core.units import GIB


@dataclass(frozen=True)
class MemoryPreset:
    """A named device and the available bytes mlxcel would see on it."""

    key: str
    label: str
    """What the picker shows."""
    bytes: int
    source: str
    """Where the number comes from, for the header and the Available row."""
    backend: Backend
    """The backend mlxcel is built for on that device."""
    gfx: str | None = None
    """An AMD card's gfx target: the device a calibration must be for (None: any)."""

    def available(self) -> AvailableMemory:
        """The preset as the estimate's available memory."""
        return AvailableMemory(self.bytes, f"{self.label} preset ({self.source})")


def _gpu(
    key: str, label: str, gib: int, backend: Backend = Backend.ROCM, gfx: str | None = None
) -> MemoryPreset:
    limit = mlx_device_limit(gib * GIB)
    return MemoryPreset(key, f"{label} {gib} GiB", limit, "MLX limit: 80%", backend, gfx)


def _apple(gb: int) -> MemoryPreset:
    return MemoryPreset(
        f"apple-{gb}",
        f"Apple M-series {gb} GB",
        gb * GIB,
        "unified memory, hw.memsize",
        Backend.METAL,
    )


PRESETS: tuple[MemoryPreset, ...] = (
    _gpu("gfx1151", "Radeon 8060S gfx1151", 96, gfx="gfx1151"),
    _gpu("mi300x", "Instinct MI300X", 192, gfx="gfx942"),
    _gpu("w7900", "Radeon PRO W7900", 48, gfx="gfx1100"),
    _gpu("r9700", "Radeon AI PRO R9700", 32, gfx="gfx1201"),
    _gpu("rx7900xtx", "Radeon RX 7900 XTX", 24, gfx="gfx1100"),
    _gpu("h100", "NVIDIA H100", 80, Backend.CUDA),
    _gpu("rtx4090", "GeForce RTX 4090", 24, Backend.CUDA),
    *(_apple(gb) for gb in (16, 24, 32, 36, 48, 64, 96, 128, 192, 512)),
)

PRESETS_BY_KEY = {p.key: p for p in PRESETS}


def preset_keys() -> tuple[str, ...]:
    """Every preset key (the `--preset` choices)."""
    return tuple(PRESETS_BY_KEY)
