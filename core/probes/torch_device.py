"""What torch would report for GPU 0: `torch.cuda.mem_get_info()` (free, total) and
`get_device_properties(0).total_memory`, asked in a child interpreter (`python -c`), so
the parent never imports torch (1.7 s) nor starts a GPU runtime. ROCm builds answer
through the same `torch.cuda` API."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass

from core.display_text import clean_text
from core.probes.mlx_device import ask_python

_CHILD = (
    "import json, torch\n"
    "if not torch.cuda.is_available():\n"
    "    print(json.dumps({'gpu': False, 'version': torch.__version__}))\n"
    "else:\n"
    "    free, total = torch.cuda.mem_get_info(0)\n"
    "    props = torch.cuda.get_device_properties(0)\n"
    "    print(json.dumps({'gpu': True, 'version': torch.__version__, 'name': props.name,\n"
    "        'free': free, 'total': total, 'total_memory': props.total_memory,\n"
    "        'arch': getattr(props, 'gcnArchName', '')}))\n"
)


@dataclass(frozen=True)
class TorchDevice:
    """torch's answer: its version, and GPU 0's figures when it sees a GPU."""

    version: str
    name: str | None = None
    free: int | None = None
    """`mem_get_info()[0]` (on an APU it can read above `total`)."""
    total: int | None = None
    """`mem_get_info()[1]`."""
    total_memory: int | None = None
    """`get_device_properties(0).total_memory`."""


def torch_installed() -> bool:
    """True when a `torch` package is importable (found without importing it)."""
    return importlib.util.find_spec("torch") is not None


def _size(value: object) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64
    return value if ok else None  # type: ignore[return-value]


def parse_torch_reply(text: str) -> TorchDevice | None:
    """The child's last JSON line, checked; None for anything else."""
    try:
        reply = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    if not isinstance(reply, dict) or not isinstance(reply.get("version"), str):
        return None
    version = clean_text(reply["version"])[:40]
    if reply.get("gpu") is not True:
        return TorchDevice(version)
    name = clean_text(str(reply.get("name") or "GPU 0"))[:80]
    arch = clean_text(str(reply.get("arch") or ""))[:40]
    return TorchDevice(
        version,
        f"{name} ({arch})" if arch else name,
        _size(reply.get("free")),
        _size(reply.get("total")),
        _size(reply.get("total_memory")),
    )


def read_torch_device(timeout: float = 60.0, python: str = sys.executable) -> TorchDevice | None:
    """Ask a child interpreter's torch; None when torch is missing, fails or does not answer."""
    if not torch_installed():
        return None
    reply = ask_python(_CHILD, timeout, python)
    return None if reply is None else parse_torch_reply(reply)
