"""Device memory that belongs to this process, and the sysfs card that is this device.

On AMD, `mem_info_vram_used` and `hipMemGetInfo` are device-wide (other processes
count too), and on a unified-memory APU (gfx1151) most allocations live in GTT,
which `mem_info_vram_used` does not see. The kernel's DRM fdinfo
(`/proc/self/fdinfo/<fd>`, amdgpu) gives this process's own `drm-memory-vram` and
`drm-memory-gtt` per DRM client: the fds of one client (dup'ed, or opened by
several libraries) share a `drm-client-id`, so each client counts once. Newer
kernels also print `drm-resident-*` / `drm-total-*`; the legacy keys win where
both exist.

Which sysfs card is the device torch uses: the card whose PCI address is the
device's bus id (torch's device properties carry it); without a bus id, the
visible-device lists (`ROCR_VISIBLE_DEVICES`, then `HIP_VISIBLE_DEVICES` or
`CUDA_VISIBLE_DEVICES`, as the HIP runtime applies them) map torch's index to the
N-th amdgpu card in PCI order. Pure Python; the roots are parameters so tests
run on recorded fdinfo texts and fake sysfs trees.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

FDINFO_MAX_BYTES = 1 << 16
"""An fdinfo text is a few hundred bytes; anything longer is not one."""
_SIZE = re.compile(r"^\s*(\d+)\s*(KiB|MiB|GiB|kB)?\s*$")
_UNITS = {None: 1, "KiB": 1 << 10, "kB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
VISIBLE_DEVICE_VARIABLES = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
"""The HIP runtime reads HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES, on top of
ROCR_VISIBLE_DEVICES (applied first, by the ROCr runtime)."""


@dataclass(frozen=True)
class DrmMemory:
    """This process's memory on one DRM device, summed over its clients."""

    vram_bytes: int
    gtt_bytes: int
    clients: int

    @property
    def total_bytes(self) -> int:
        """VRAM plus GTT: what this process holds on the device, wherever it lives."""
        return self.vram_bytes + self.gtt_bytes


def parse_fdinfo(text: str) -> dict[str, str]:
    """`key:\\tvalue` lines into a dict (later duplicates win; odd lines skipped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def parse_size(text: str) -> int | None:
    """`1032 KiB` (or bare bytes) in bytes; None when it is not a size."""
    match = _SIZE.match(text)
    if match is None:
        return None
    return int(match.group(1)) * _UNITS[match.group(2)]


def _region_bytes(fields: Mapping[str, str], region: str) -> int:
    for key in (f"drm-memory-{region}", f"drm-resident-{region}", f"drm-total-{region}"):
        if key in fields:
            return parse_size(fields[key]) or 0
    return 0


def normalize_bus_id(bus_id: str) -> str:
    """`0000:03:00.0` in lower case; a bus id without a domain gets `0000:`."""
    bus_id = bus_id.strip().lower()
    return bus_id if bus_id.count(":") == 2 else f"0000:{bus_id}"


def read_process_drm_memory(
    proc_self: Path = Path("/proc/self"), *, driver: str = "amdgpu", bus_id: str | None = None
) -> DrmMemory | None:
    """This process's VRAM and GTT on `driver`'s device (only `bus_id`'s when given),
    one count per `drm-client-id`; None when it holds no such DRM client."""
    wanted = normalize_bus_id(bus_id) if bus_id else None
    try:
        entries = sorted(os.listdir(proc_self / "fdinfo"))
    except OSError:
        return None
    seen: dict[str, tuple[int, int]] = {}
    for name in entries:
        try:
            with open(proc_self / "fdinfo" / name, encoding="ascii", errors="replace") as fh:
                fields = parse_fdinfo(fh.read(FDINFO_MAX_BYTES))
        except OSError:  # the fd closed while listing
            continue
        if fields.get("drm-driver") != driver:
            continue
        if wanted is not None and normalize_bus_id(fields.get("drm-pdev", "")) != wanted:
            continue
        client = fields.get("drm-client-id", f"fd{name}")
        seen[client] = (_region_bytes(fields, "vram"), _region_bytes(fields, "gtt"))
    if not seen:
        return None
    return DrmMemory(
        vram_bytes=sum(v for v, _ in seen.values()),
        gtt_bytes=sum(g for _, g in seen.values()),
        clients=len(seen),
    )


def _visible(value: str | None) -> list[int] | None:
    """A visible-devices list of indices; None when unset; ValueError for UUIDs etc."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return []
    return [int(item) for item in value.split(",")]


def physical_index(index: int, env: Mapping[str, str]) -> int | None:
    """The physical GPU (PCI order) behind torch's device `index`, through
    ROCR_VISIBLE_DEVICES and then HIP_/CUDA_VISIBLE_DEVICES; None if the lists
    hide it or are not plain indices (UUIDs)."""
    try:
        rocr = _visible(env.get("ROCR_VISIBLE_DEVICES"))
        hip_name = next((n for n in VISIBLE_DEVICE_VARIABLES if env.get(n) is not None), None)
        hip = _visible(env.get(hip_name)) if hip_name else None
    except ValueError:
        return None
    chain = index
    if hip is not None:
        if chain >= len(hip):
            return None
        chain = hip[chain]
    if rocr is not None:
        if chain >= len(rocr):
            return None
        chain = rocr[chain]
    return chain


def amdgpu_cards(drm_root: Path = Path("/sys/class/drm")) -> list[tuple[str, Path]]:
    """(PCI bus id, device folder) of every card with amdgpu memory files, in PCI order."""
    out: list[tuple[str, Path]] = []
    try:
        names = os.listdir(drm_root)
    except OSError:
        return out
    for name in names:
        if not re.fullmatch(r"card\d+", name):
            continue
        device = drm_root / name / "device"
        if not (device / "mem_info_vram_used").is_file():
            continue
        out.append((normalize_bus_id(os.path.realpath(device).rsplit("/", 1)[-1]), device))
    return sorted(out)


def pick_card(
    bus_id: str | None,
    index: int,
    env: Mapping[str, str],
    drm_root: Path = Path("/sys/class/drm"),
) -> tuple[Path, str] | None:
    """The sysfs device folder of torch's device and how it was matched: by its PCI
    bus id, else by `index` through the visible-device lists; None if not found."""
    cards = amdgpu_cards(drm_root)
    if bus_id:
        wanted = normalize_bus_id(bus_id)
        for card_bus, device in cards:
            if card_bus == wanted:
                return device, f"bus id {wanted}"
        return None
    physical = physical_index(index, env)
    if physical is None or physical >= len(cards):
        return None
    return cards[physical][1], f"visible device {index} -> card {physical} of {len(cards)}"


def read_int_file(path: Path) -> int | None:
    """An integer sysfs file, or None."""
    try:
        with open(path, encoding="ascii") as fh:
            return int(fh.read(64).strip())
    except (OSError, ValueError):
        return None
