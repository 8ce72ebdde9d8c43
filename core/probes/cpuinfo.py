"""The CPU's model name: `/proc/cpuinfo`, else what `platform` knows."""

from __future__ import annotations

from pathlib import Path

PROC_ROOT = Path("/proc")


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
