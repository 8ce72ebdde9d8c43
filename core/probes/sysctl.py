"""macOS `sysctl -n hw.memsize`: Apple unified memory."""

from __future__ import annotations

import subprocess
import sys

from core.units import GIB


def read_unified_memory_gib() -> int | None:
    """macOS `hw.memsize` floored to whole GiB (mlxcel's `unified_memory_gb`)."""
    if sys.platform != "darwin":
        return None
    try:
        out = subprocess.run(
            ["sysctl", "-n", "hw.memsize"], capture_output=True, text=True, timeout=2.0, check=True
        ).stdout
        return int(out.strip()) // GIB
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
