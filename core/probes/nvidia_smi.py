"""`nvidia-smi --query-gpu=name,memory.total,memory.used`: GPU 0 without a CUDA context."""

from __future__ import annotations

import subprocess

from core.units import MIB


def query_nvidia_smi(timeout: float = 2.0) -> tuple[str, int, int] | None:
    """GPU 0's name, total and used bytes from `nvidia-smi` (no CUDA context), or None."""
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,memory.total,memory.used",
                "--format=csv,noheader,nounits",
                "-i",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        ).stdout
        name, total, used = (part.strip() for part in out.splitlines()[0].rsplit(",", 2))
        return name, int(total) * MIB, int(used) * MIB
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
