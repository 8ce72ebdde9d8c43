"""MLX's own view of its device: `mx.device_info()` and `mx.get_memory_limit()`.

Read in a child interpreter (`python -c`): the parent never imports mlx, which
would start a GPU runtime in it and cost a second or more. Used where nothing
cheaper answers (Metal, or a GPU whose sysfs or NVML cannot be read), and it
gives MLX's own allocator limit rather than the 80% rule restated.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass

from core.display_text import clean_text

_CHILD = (
    "import json, mlx.core as mx\n"
    "info = mx.device_info()\n"
    "print(json.dumps({'info': {k: v for k, v in info.items() "
    "if isinstance(v, (int, str))}, 'limit': mx.get_memory_limit(), "
    "'device': str(mx.default_device())}))\n"
)


@dataclass(frozen=True)
class MlxDevice:
    """What MLX says about its default device."""

    name: str
    """`device_info()['device_name']` (or its architecture)."""
    device: str
    """`Device(gpu, 0)`, `Device(cpu, 0)`."""
    memory_limit: int
    """`mx.get_memory_limit()`: the allocator's limit, in bytes."""
    memory_size: int | None
    """`device_info()['memory_size']` where MLX reports it (Metal), else None."""

    @property
    def is_gpu(self) -> bool:
        """True when MLX's default device is a GPU (`Device(gpu, 0)`)."""
        return self.device.startswith("Device(gpu")


def mlx_installed() -> bool:
    """True when an `mlx` package is importable (found without importing it)."""
    return importlib.util.find_spec("mlx") is not None


def parse_mlx_reply(text: str) -> MlxDevice | None:
    """The child's one JSON line, checked; None for anything else."""
    try:
        reply = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    if not isinstance(reply, dict) or not isinstance(reply.get("info"), dict):
        return None
    info, limit = reply["info"], reply.get("limit")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        return None
    size = info.get("memory_size")
    valid_size = isinstance(size, int) and not isinstance(size, bool) and size > 0
    name = info.get("device_name") or info.get("architecture") or "MLX device"
    return MlxDevice(
        clean_text(str(name)),
        clean_text(str(reply.get("device", ""))),
        limit,
        size if valid_size else None,
    )


def ask_python(code: str, timeout: float, python: str = sys.executable) -> str | None:
    """What `python -c code` printed, or None when it failed or did not answer in time
    (a runtime's own question, asked where its import cannot cost the parent)."""
    try:
        done = subprocess.run(
            [python, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def read_mlx_device(timeout: float = 20.0, python: str = sys.executable) -> MlxDevice | None:
    """Ask a child interpreter's MLX; None when mlx is missing, fails or does not answer."""
    if not mlx_installed():
        return None
    reply = ask_python(_CHILD, timeout, python)
    return None if reply is None else parse_mlx_reply(reply)
