"""A process's GPU memory as the DRM driver counts it: `/proc/PID/fdinfo/*`.

Every open DRM file of a process has an fdinfo entry with `drm-client-id`, the card
(`drm-pdev`) and, on amdgpu, `drm-memory-vram` / `drm-memory-gtt` (KiB). Several fds
can share one client (a dup, a fork), so a client is counted once per card. A process
with no DRM fd has no clients; a process that is gone (or not ours to read) reads None.
The root is injectable so that tests read recorded trees.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

FDINFO_CAP = 64 * 1024
"""The most of one fdinfo entry read (a DRM one is under 2 KiB)."""
_UNITS = {"": 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


@dataclass(frozen=True)
class DrmClient:
    """One DRM client (an open render or card node) of a process."""

    client_id: str
    pdev: str
    """The card's PCI address (`0000:c3:00.0`), empty when the driver does not say."""
    driver: str
    vram_bytes: int
    gtt_bytes: int


@dataclass(frozen=True)
class DrmUsage:
    """The DRM memory of a set of processes, each client once."""

    vram_bytes: int = 0
    gtt_bytes: int = 0
    clients: int = 0

    @property
    def total_bytes(self) -> int:
        """VRAM + GTT."""
        return self.vram_bytes + self.gtt_bytes


def _size(text: str) -> int | None:
    number, _, unit = text.strip().partition(" ")
    if not number.isdigit() or unit.strip() not in _UNITS:
        return None
    return int(number) * _UNITS[unit.strip()]


def parse_fdinfo(text: str) -> DrmClient | None:
    """The DRM client an fdinfo entry describes, or None (not a DRM fd)."""
    keys: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            keys[key.strip()] = value.strip()
    client = keys.get("drm-client-id")
    if not client:
        return None
    return DrmClient(
        client_id=client,
        pdev=keys.get("drm-pdev", ""),
        driver=keys.get("drm-driver", ""),
        vram_bytes=_size(keys.get("drm-memory-vram", "0 KiB")) or 0,
        gtt_bytes=_size(keys.get("drm-memory-gtt", "0 KiB")) or 0,
    )


def _read(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, FDINFO_CAP).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def read_clients(pid: int, root: Path = Path("/")) -> tuple[DrmClient, ...] | None:
    """The DRM clients of process `pid` (empty without a DRM fd), None when its fdinfo
    cannot be listed (gone, or another user's)."""
    folder = root / "proc" / str(pid) / "fdinfo"
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    found = []
    for name in names:
        text = _read(folder / name) if name.isdigit() else None
        client = parse_fdinfo(text) if text is not None else None
        if client is not None:
            found.append(client)
    return tuple(found)


def drm_usage(pids: Iterable[int], root: Path = Path("/"), *, pdev: str | None = None) -> DrmUsage:
    """The VRAM and GTT of the processes' DRM clients, each (card, client id) once; only
    the card `pdev` when given."""
    seen: dict[tuple[str, str], DrmClient] = {}
    for pid in pids:
        for client in read_clients(pid, root) or ():
            if pdev is None or client.pdev == pdev:
                seen.setdefault((client.pdev, client.client_id), client)
    return DrmUsage(
        vram_bytes=sum(c.vram_bytes for c in seen.values()),
        gtt_bytes=sum(c.gtt_bytes for c in seen.values()),
        clients=len(seen),
    )
