"""amdgpu's memory in sysfs: per card `class/drm/cardN/device/mem_info_vram_total`,
`_used`, `mem_info_vis_vram_*`, `mem_info_gtt_*`, the card's `product_name`, and its
gfx target and APU flag from the KFD topology (matched by render node).

Every file is read through `core.regular_file` (a FIFO or a link to /dev/zero is no
reading, never a hang) and capped; a size is whole decimal bytes within u64, as
`inspect` reads a size, else no reading."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from core.numbers import decimal_to_int
from core.probes.kfd_topology import read_kfd_nodes
from core.probes.pool import PoolReading
from core.regular_file import read_small_text
from core.units import U64_MAX

VALUE_CAP = 64
"""The most bytes of one sysfs value read (a u64 is 20 digits)."""
NAME_CAP = 256


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
class VramTotal:
    """The VRAM size mlxcel's detection reads, and the words naming where."""

    total_bytes: int
    name: str
    used_bytes: int = 0
    """`mem_info_vram_used` beside the total (0 where unreadable, as `_pool` reads it)."""


def read_size(path: Path) -> int | None:
    """A sysfs size: whole decimal bytes within u64, else None (unreadable, not a
    regular file, not digits, or out of range)."""
    try:
        text = read_small_text(path, VALUE_CAP).strip()
    except OSError:
        return None
    value = decimal_to_int(text) if text.isascii() and text.isdigit() else None
    return value if value is not None and value <= U64_MAX else None


def _pool(device: Path, stem: str) -> PoolReading | None:
    total = read_size(device / f"mem_info_{stem}_total")
    used = read_size(device / f"mem_info_{stem}_used")
    if total is None:
        return None
    return PoolReading(total, used or 0)


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
            name = read_small_text(device / "product_name", NAME_CAP).strip() or None
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


def read_amdgpu_vram(
    pattern: str = "/sys/class/drm/card*/device/mem_info_vram_total",
) -> VramTotal | None:
    """The largest amdgpu VRAM size in sysfs (the first device MLX would use)."""
    best: VramTotal | None = None
    for path in sorted(glob.glob(pattern)):
        total = read_size(Path(path))
        if total is not None and total > 0 and (best is None or total > best.total_bytes):
            used = read_size(Path(path).with_name("mem_info_vram_used")) or 0
            best = VramTotal(total, f"amdgpu VRAM ({path.split('/')[4]})", used)
    return best
