"""The CPU's model name: `/proc/cpuinfo`, else what `platform` knows."""

from __future__ import annotations

from pathlib import Path

from core.display_text import clean_text
from core.regular_file import read_regular

PROC_ROOT = Path("/proc")
CPUINFO_HEAD = 64 * 1024
"""The first processor's block, which names the model, is in the first kilobytes."""


def read_cpu_name(proc_root: Path | None = None) -> str:
    """The CPU's model name (`/proc/cpuinfo`), else what `platform` knows: the CPU
    device's name, and the device a calibration of its runs is for."""
    import platform

    try:
        head = read_regular((proc_root or PROC_ROOT) / "cpuinfo", CPUINFO_HEAD)
    except OSError:
        head = b""
    for line in head[:CPUINFO_HEAD].decode("utf-8", "replace").splitlines():
        if line.startswith("model name"):
            return clean_text(line.split(":", 1)[1].strip())[:120]
    return platform.processor() or platform.machine() or "CPU"
