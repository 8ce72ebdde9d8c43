"""Every memory figure of this machine side by side, each with its source, and the
budget vramscope takes from them (`vramscope device`): the amdgpu cards' VRAM and
GTT, the TTM pages limit, `MemTotal`/`MemAvailable`, what torch and MLX would report
(each asked in a child interpreter, only when installed), and `--memory-limit
free|total` as `core.device.memory` computes it for `inspect`, `fit` and the explorer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.backend import Backend
from core.device import reading
from core.device.memory import device_budget, ttm_fix
from core.device_memory import Budget, DeviceMemory
from core.estimate.available import AvailableMemory
from core.probes.amdgpu_sysfs import CardMemory, read_amdgpu_cards
from core.probes.meminfo import read_meminfo_values
from core.probes.mlx_device import MlxDevice, mlx_installed, read_mlx_device
from core.probes.torch_device import TorchDevice, read_torch_device, torch_installed
from core.probes.ttm import TtmLimit, page_size, read_ttm_limit


@dataclass(frozen=True)
class Runtime:
    """What one ML runtime said, or why it was not asked."""

    installed: bool
    asked: bool
    torch: TorchDevice | None = None
    mlx: MlxDevice | None = None


@dataclass(frozen=True)
class DeviceFigures:
    """This machine's memory figures, where each was read, and the budget."""

    backend: Backend
    sys_root: Path
    proc_root: Path
    cards: tuple[CardMemory, ...]
    ttm: TtmLimit | None
    page_size: int
    mem_total: int | str
    """`MemTotal` bytes, or why it was not read."""
    mem_available: int | str
    torch: Runtime
    mlx: Runtime
    device: DeviceMemory | None
    """The reading the budget is taken from (None: nothing readable)."""
    free: AvailableMemory | None
    total: AvailableMemory | None
    fix: str | None
    """The kernel parameter that raises an APU's TTM limit, where it is too low."""

    def card_path(self, card: CardMemory) -> Path:
        """The sysfs folder a card's figures come from."""
        return self.sys_root / "class" / "drm" / card.card / "device"

    @property
    def ttm_path(self) -> Path:
        """Where the TTM limit is read."""
        return self.sys_root / "module" / "ttm" / "parameters" / "pages_limit"

    @property
    def meminfo_path(self) -> Path:
        """Where `MemTotal` and `MemAvailable` are read."""
        return self.proc_root / "meminfo"


def _ask_torch(ask: bool, probe: Callable[[], TorchDevice | None]) -> Runtime:
    installed = torch_installed()
    if not installed or not ask:
        return Runtime(installed, False)
    return Runtime(True, True, torch=probe())


def _ask_mlx(ask: bool, probe: Callable[[], MlxDevice | None]) -> Runtime:
    installed = mlx_installed()
    if not installed or not ask:
        return Runtime(installed, False)
    return Runtime(True, True, mlx=probe())


def read_device_figures(
    backend: Backend,
    *,
    ask_runtimes: bool = True,
    torch_probe: Callable[[], TorchDevice | None] | None = None,
    mlx_probe: Callable[[], MlxDevice | None] | None = None,
) -> DeviceFigures:
    """Every figure under `reading.SYS_ROOT` and `PROC_ROOT` (looked up now: tests
    point them at recorded trees), torch and MLX each asked once in a child."""
    sys_root, proc_root = reading.SYS_ROOT, reading.PROC_ROOT
    torch = _ask_torch(ask_runtimes, torch_probe or read_torch_device)
    mlx = _ask_mlx(ask_runtimes, mlx_probe or read_mlx_device)
    device = reading.read_device_memory(
        backend, sys_root=sys_root, proc_root=proc_root, mlx=lambda: mlx.mlx
    )
    values = read_meminfo_values(proc_root / "meminfo")
    mem_total = values["MemTotal"]
    size = page_size()
    ttm = read_ttm_limit(sys_root, size)
    fix = None
    if device is not None and isinstance(mem_total, int):
        fix = ttm_fix(device, mem_total, size)
    return DeviceFigures(
        backend,
        sys_root,
        proc_root,
        tuple(read_amdgpu_cards(sys_root)),
        ttm,
        size,
        mem_total,
        values["MemAvailable"],
        torch,
        mlx,
        device,
        None if device is None else device_budget(Budget.FREE, device),
        None if device is None else device_budget(Budget.TOTAL, device),
        fix,
    )
