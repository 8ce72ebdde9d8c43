"""Available-memory choices: this machine's detected budget, device presets, or a typed size.

A GPU preset is the limit MLX itself would use on that device (80% of its
memory, `core.device_memory.mlx_device_limit`), which is what mlxcel compares the
total against; on gfx1151 with 96 GiB of VRAM that is the 76.80 GiB of
mlxcel's worked example. Apple presets are the unified memory size, mlxcel's
`hw.memsize` step.

A Strix Halo (Ryzen AI Max+ 395, gfx1151) preset is an APU that allocates from GTT,
which the kernel caps at `ttm.pages_limit`: half of RAM by default, or raised (to RAM
less 8 GiB for the system, the figure `vramscope device` suggests); its budget is MLX's
80% of that pool, as `core.device.memory` computes it for a machine read.

Each preset also names its device's backend (an NVIDIA card CUDA, an AMD card ROCm,
Apple silicon Metal): `--preset` selects it unless `--backend` is given, so
`--preset rtx4090` no longer keeps ROCm's 1 GiB in-flight reserve.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.backend import Backend
from core.device.memory import SYSTEM_RESERVE
from core.device_memory import mlx_device_limit
from core.estimate.available import AvailableMemory
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
    assumes: str = ""
    """What the figure takes for granted of the machine (`vramscope device --presets`)."""

    def available(self) -> AvailableMemory:
        """The preset as the estimate's available memory."""
        return AvailableMemory(self.bytes, f"{self.label} preset ({self.source})")


def _gpu(
    key: str,
    label: str,
    gib: int,
    backend: Backend = Backend.ROCM,
    gfx: str | None = None,
    assumes: str = "",
) -> MemoryPreset:
    limit = mlx_device_limit(gib * GIB)
    assumes = assumes or f"the card's whole {gib} GiB of VRAM free; MLX's limit is 80% of it"
    return MemoryPreset(key, f"{label} {gib} GiB", limit, "MLX limit: 80%", backend, gfx, assumes)


def _strix_halo(gb: int, *, raised: bool) -> MemoryPreset:
    """A Ryzen AI Max+ 395 with `gb` GB of RAM: its GTT pool under the TTM limit."""
    ram = gb * GIB
    pool = ram - SYSTEM_RESERVE if raised else ram // 2
    ttm = f"{pool // GIB} GiB"
    how = "raised" if raised else "default"
    return MemoryPreset(
        f"strix-halo-{gb}" + ("-ttm" if raised else ""),
        f"Strix Halo {gb} GB · TTM {ttm} ({how})",
        mlx_device_limit(pool),
        f"Ryzen AI Max+ 395 (gfx1151 APU), GTT under ttm.pages_limit {ttm} "
        + ("(RAM less 8 GiB, raised)" if raised else "(half of RAM, the default)")
        + "; MLX limit: 80%",
        Backend.ROCM,
        "gfx1151",
        f"{gb} GB of RAM, the GPU allocating from GTT, and ttm.pages_limit "
        + (
            f"raised to {ttm} (RAM less 8 GiB: the kernel parameter `vramscope device` suggests)"
            if raised
            else f"at the kernel's default, half of RAM ({ttm})"
        )
        + "; MLX's limit is 80% of that pool",
    )


def _apple(gb: int) -> MemoryPreset:
    return MemoryPreset(
        f"apple-{gb}",
        f"Apple M-series {gb} GB",
        gb * GIB,
        "unified memory, hw.memsize",
        Backend.METAL,
        None,
        f"{gb} GB of unified memory, all of it counted (mlxcel's hw.memsize step)",
    )


PRESETS: tuple[MemoryPreset, ...] = (
    _gpu(
        "gfx1151",
        "Radeon 8060S gfx1151",
        96,
        gfx="gfx1151",
        assumes="a Strix Halo (128 GB) whose firmware sets 96 GiB of VRAM carve-out, the "
        "GPU allocating from it (mlxcel's worked example); MLX's limit is 80% of it",
    ),
    *(_strix_halo(gb, raised=raised) for gb in (64, 96, 128) for raised in (False, True)),
    _gpu("mi325x", "Instinct MI325X", 256, gfx="gfx942"),
    _gpu("mi300x", "Instinct MI300X", 192, gfx="gfx942"),
    _gpu("w7900", "Radeon PRO W7900", 48, gfx="gfx1100"),
    _gpu("r9700", "Radeon AI PRO R9700", 32, gfx="gfx1201"),
    _gpu("rx7900xtx", "Radeon RX 7900 XTX", 24, gfx="gfx1100"),
    _gpu("rx7900xt", "Radeon RX 7900 XT", 20, gfx="gfx1100"),
    _gpu("rx7900gre", "Radeon RX 7900 GRE", 16, gfx="gfx1100"),
    _gpu("rx9070xt", "Radeon RX 9070 XT", 16, gfx="gfx1201"),
    _gpu("h100", "NVIDIA H100", 80, Backend.CUDA),
    _gpu("rtx4090", "GeForce RTX 4090", 24, Backend.CUDA),
    *(_apple(gb) for gb in (16, 24, 32, 36, 48, 64, 96, 128, 192, 512)),
)

PRESETS_BY_KEY = {p.key: p for p in PRESETS}


def preset_keys() -> tuple[str, ...]:
    """Every preset key (the `--preset` choices)."""
    return tuple(PRESETS_BY_KEY)
