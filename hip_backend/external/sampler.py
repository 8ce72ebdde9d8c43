"""Sampling the memory of a process tree: what `vramscope run` reads at each interval.

At each sample: every process of the run (`hip_backend.external.tree`: its cgroup, its
token in the environment, and every process below the holder by `PPid`,
`core.probes.proc_status`), the holder itself left out; which of them are stopped;
their host memory (the sum of their `VmHWM`, each process's own high-water mark, and
of their `VmRSS`); their amdgpu DRM memory,
VRAM and GTT, each DRM client once (`core.probes.drm_fdinfo`); the amdgpu cards' own
used VRAM + GTT against the first sample (sysfs: other processes count); NVML's
per-process used memory (`core.probes.nvml`, only where pynvml is installed). The
peaks are the largest sums seen at one sample. Processes outside the tree that hold
GPU memory are the guard's: noted, so that the run can warn once.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from core.probes.amdgpu_sysfs import read_amdgpu_cards
from core.probes.drm_fdinfo import drm_usage, read_clients
from core.probes.nvml import read_nvml_processes
from core.probes.proc_status import (
    ProcStatus,
    descendants,
    read_all,
    read_cmdline,
    read_state,
    read_status,
)
from hip_backend.external.tree import RunTree


@dataclass
class TreePeaks:
    """The largest figures seen at one sample, in bytes (None: never read)."""

    host_hwm: int = 0
    host_rss: int = 0
    drm_vram: int | None = None
    drm_gtt: int | None = None
    drm_total: int | None = None
    card_delta: int | None = None
    nvml: int | None = None
    samples: int = 0
    others: set[int] = field(default_factory=set)
    """Processes outside the tree seen holding GPU memory."""
    stopped: list[int] = field(default_factory=list)
    """The processes of the tree stopped at the last sample (SIGSTOP, Ctrl-Z)."""


def _max(old: int | None, new: int | None) -> int | None:
    if new is None:
        return old
    return new if old is None else max(old, new)


def _card_used(root: Path) -> int | None:
    cards = read_amdgpu_cards(root / "sys")
    if not cards:
        return None
    return sum((c.vram.used if c.vram else 0) + (c.gtt.used if c.gtt else 0) for c in cards)


class TreeSampler:
    """Samples the processes below `holder` (not the holder itself)."""

    def __init__(self, holder: int, root: Path = Path("/"), tree: RunTree | None = None) -> None:
        self.holder = holder
        self.root = root
        self.tree = tree
        self.peaks = TreePeaks()
        self._card_start = _card_used(root)
        self._amdgpu = self._card_start is not None
        self._nvml = importlib.util.find_spec("pynvml") is not None
        self._holder_cmdline = read_cmdline(holder, root)
        self._started: set[int] = set()
        """The holder's children seen past their exec (their command line read once)."""

    def sample(self) -> list[int]:
        """Read once; the tree's pids (empty once every process of it is gone)."""
        statuses = read_all(self.root)
        found = set(descendants(statuses, self.holder))
        if self.tree is not None:
            found |= self.tree.members(list(statuses))
        tree = sorted(p for p in found if p in statuses and p != self.holder)
        if not tree:
            return tree
        peaks = self.peaks
        peaks.samples += 1
        peaks.stopped = [p for p in tree if read_state(p, self.root) in ("T", "t")]
        known = set(self._started)
        started = [p for p in tree if not self._before_exec(statuses[p])]
        for pid in self._started - known:
            # Seen past its exec for the first time: its status, read above, may be of
            # before the exec (the holder's copy, ~14 MB; the exec came between the two
            # reads), which read as the command's once under load. Read it again now,
            # after its new command line: it is the command's own.
            again = read_status(pid, self.root)
            if again is not None:
                statuses[pid] = again
            elif pid in started:
                started.remove(pid)  # gone meanwhile: its last figures are unknown
        peaks.host_hwm = max(peaks.host_hwm, sum(statuses[p].hwm_bytes for p in started))
        peaks.host_rss = max(peaks.host_rss, sum(statuses[p].rss_bytes for p in started))
        if self._amdgpu:
            usage = drm_usage(tree, self.root)
            peaks.drm_vram = _max(peaks.drm_vram, usage.vram_bytes)
            peaks.drm_gtt = _max(peaks.drm_gtt, usage.gtt_bytes)
            peaks.drm_total = _max(peaks.drm_total, usage.total_bytes)
            used = _card_used(self.root)
            if used is not None and self._card_start is not None:
                peaks.card_delta = _max(peaks.card_delta, max(0, used - self._card_start))
            self._guard_drm(statuses.keys(), set(tree))
        if self._nvml:
            listed = read_nvml_processes()
            if listed is not None:
                peaks.nvml = _max(peaks.nvml, sum(listed.get(p, 0) for p in tree))
                peaks.others |= {p for p in listed if p not in tree and p != os.getpid()}
        return tree

    def _before_exec(self, status: ProcStatus) -> bool:
        """True for the command's process between the holder's fork and its exec: it
        still runs in the holder's memory (and shows it as its own), under the holder's
        command line. Only the holder's own children can be there, and each once."""
        if status.ppid != self.holder or status.pid in self._started or not self._holder_cmdline:
            return False
        if read_cmdline(status.pid, self.root) == self._holder_cmdline:
            return True
        self._started.add(status.pid)
        return False

    def _guard_drm(self, pids: Iterable[int], tree: set[int]) -> None:
        mine = tree | {self.holder, os.getpid()}
        for pid in pids:
            if pid in mine or pid in self.peaks.others:
                continue
            clients = read_clients(pid, self.root) or ()
            if any(c.vram_bytes + c.gtt_bytes for c in clients):
                self.peaks.others.add(pid)
