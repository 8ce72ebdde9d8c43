"""Free and total device memory from sysfs trees: a 24 GiB card, a gfx1151 APU, no GPU."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from core.backend import Backend
from core.device.reading import (
    device_available,
    read_device_memory,
)
from core.device_memory import Budget
from core.errors import UsageError
from core.probes.amdgpu_sysfs import read_amdgpu_cards
from core.probes.kfd_topology import gfx_target
from core.probes.mlx_device import MlxDevice, mlx_installed, parse_mlx_reply, read_mlx_device
from core.units import GIB, MIB

DATA = Path(__file__).parent / "data"


def roots(name: str) -> dict[str, Any]:
    """A recorded tree, and no MLX to ask (its own tests ask the real one)."""
    return {"sys_root": DATA / name / "sys", "proc_root": DATA / name / "proc", "mlx": no_mlx}


def no_mlx() -> MlxDevice | None:
    return None


def test_a_24_gib_discrete_card() -> None:
    (card,) = read_amdgpu_cards(DATA / "discrete-24gib" / "sys")
    assert (card.card, card.name, card.gfx_target, card.apu) == (
        "card1",
        "Radeon RX 7900 XTX",
        "gfx1100",
        False,
    )
    device = read_device_memory(Backend.ROCM, **roots("discrete-24gib"))
    assert device is not None
    assert (device.total, device.used, device.free) == (24 * GIB, 1536 * MIB, 24 * GIB - 1536 * MIB)
    free, _ = device_available(Budget.FREE, Backend.ROCM, **roots("discrete-24gib"))
    total, _ = device_available(Budget.TOTAL, Backend.ROCM, **roots("discrete-24gib"))
    # MLX's limit (80% of 24 GiB) is below the 22.5 GiB free, so free is capped there.
    assert total.bytes == int(24 * GIB * 0.8) == free.bytes
    assert "capped at MLX's 80% limit" in free.source


def test_a_gfx1151_apu_counts_gtt() -> None:
    (card,) = read_amdgpu_cards(DATA / "gfx1151-apu" / "sys")
    assert (card.gfx_target, card.apu) == ("gfx1151", True)
    device = read_device_memory(Backend.ROCM, **roots("gfx1151-apu"))
    assert device is not None
    assert (device.total, device.used) == (96 * GIB, 30 * GIB)
    assert "GTT (APU" in device.how
    free, _ = device_available(Budget.FREE, Backend.ROCM, **roots("gfx1151-apu"))
    total, _ = device_available(Budget.TOTAL, Backend.ROCM, **roots("gfx1151-apu"))
    # Other processes hold 30 GiB of GTT: 66 GiB free, below MLX's 76.80 GiB limit.
    assert free.bytes == 66 * GIB
    assert "in use" in free.source and "capped" not in free.source
    assert total.bytes == int(96 * GIB * 0.8)


def test_no_gpu_is_no_rocm_reading_and_the_cpu_reads_proc_meminfo() -> None:
    assert read_amdgpu_cards(DATA / "no-gpu" / "sys") == []
    # No amdgpu card: no ROCm device, never the host's RAM under its name (#41).
    assert read_device_memory(Backend.ROCM, **roots("no-gpu")) is None
    with pytest.raises(UsageError, match="no AMD GPU found"):
        device_available(Budget.FREE, Backend.ROCM, **roots("no-gpu"))
    device = read_device_memory(Backend.CPU, **roots("no-gpu"))
    assert device is not None
    assert (device.total, device.free) == (16384000 * 1024, 8192000 * 1024)
    free, _ = device_available(Budget.FREE, Backend.CPU, **roots("no-gpu"))
    assert free.bytes == 8192000 * 1024  # MemAvailable, no 80% rule on the CPU


def test_nothing_readable_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no device memory is readable"):
        device_available(
            Budget.FREE, Backend.CPU, sys_root=tmp_path, proc_root=tmp_path, mlx=no_mlx
        )


@pytest.mark.parametrize(
    ("version", "name"),
    [(110501, "gfx1151"), (110000, "gfx1100"), (90402, "gfx942"), (90010, "gfx90a")],
)
def test_gfx_target_names(version: int, name: str) -> None:
    assert gfx_target(version) == name


# --- NVIDIA through NVML -------------------------------------------------------------


class _NvmlError(Exception):
    pass


def fake_pynvml(*, fail_init: bool = False) -> SimpleNamespace:
    """What nvidia-ml-py's `pynvml` answers for one 80 GiB GPU with 2 GiB in use."""

    def init() -> None:
        if fail_init:
            raise _NvmlError("NVML Shared Library Not Found")

    return SimpleNamespace(
        nvmlInit=init,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: ("handle", i),
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3\x1b[2J",
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(
            total=80 * GIB, used=2 * GIB, free=78 * GIB
        ),
    )


def test_cuda_reads_nvml_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    device = read_device_memory(Backend.CUDA, **roots("no-gpu"))
    assert device is not None
    assert (device.device, device.total, device.used) == (
        "NVIDIA H100 80GB HBM3[2J",
        80 * GIB,
        2 * GIB,
    )
    assert device.how == "NVML (GPU 0)"
    total, _ = device_available(Budget.TOTAL, Backend.CUDA, **roots("no-gpu"))
    assert total.bytes == int(80 * GIB * 0.8)


def test_nvml_without_a_driver_is_no_reading_never_the_host_s_ram(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NVML's library missing: nvidia-smi next (absent here), never a crash, and no
    CUDA reading at all rather than /proc/meminfo under the GPU's name (#41)."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(fail_init=True))
    monkeypatch.setenv("PATH", "/nonexistent")  # and no nvidia-smi either
    assert read_device_memory(Backend.CUDA, **roots("no-gpu")) is None


def test_neither_nvml_nor_mlx_is_imported_off_cuda() -> None:
    import subprocess

    # The CPU reading asks MLX (where installed) in a child: this interpreter never
    # imports it, nor pynvml.
    code = (
        "import sys; from core.backend import Backend; from core.device import reading;"
        "reading.read_device_memory(Backend.ROCM, mlx=lambda: None);"
        "reading.read_device_memory(Backend.CPU);"
        "print('pynvml' in sys.modules, 'mlx' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[3],
    ).stdout
    assert out.split() == ["False", "False"]


# --- MLX's own answer, from a child process -----------------------------------------

needs_mlx = pytest.mark.skipif(not mlx_installed(), reason="mlx is not installed")


def _meminfo_total() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


@needs_mlx
def test_mlx_answers_for_this_cpu_from_a_child() -> None:
    found = read_mlx_device()
    assert found is not None
    assert found.device == "Device(cpu, 0)" and not found.is_gpu
    cpu_model = next(
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    )
    assert found.name == cpu_model
    # MLX's CPU allocator limit is 80% of MemTotal, as on GPUs (mlx 0.32).
    assert found.memory_limit == int(_meminfo_total() * 0.8)


@needs_mlx
def test_cpu_total_is_mlx_s_own_limit() -> None:
    device = read_device_memory(Backend.CPU)
    assert device is not None and device.mlx_limit is not None
    total, _ = device_available(Budget.TOTAL, Backend.CPU)
    assert total.bytes == device.mlx_limit == int(device.total * 0.8)
    assert "MLX's own limit" in total.source


@needs_mlx
def test_a_cpu_only_mlx_is_not_taken_for_a_gpu() -> None:
    device = read_device_memory(Backend.METAL, proc_root=DATA / "no-gpu" / "proc")
    assert device is not None and device.mlx_limit is None
    assert device.total == 16384000 * 1024  # the recorded /proc/meminfo
    assert any("MLX's default device is the CPU" in n for n in device.notes)


def test_a_gpu_answer_from_mlx_is_the_pool_where_nothing_else_reads() -> None:
    metal = MlxDevice("Apple M3 Max", "Device(gpu, 0)", 96 * GIB, 128 * GIB)
    device = read_device_memory(Backend.METAL, **{**roots("no-gpu"), "mlx": lambda: metal})
    assert device is not None
    assert (device.device, device.total, device.limit) == (
        "Apple M3 Max (Device(gpu, 0))",
        128 * GIB,
        96 * GIB,
    )
    total, _ = device_available(
        Budget.TOTAL, Backend.METAL, **{**roots("no-gpu"), "mlx": lambda: metal}
    )
    assert total.bytes == 96 * GIB


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "not json",
        "[]",
        '{"info": {}, "limit": -1}',
        '{"info": {}, "limit": true}',
        '{"info": 3, "limit": 5}',
    ],
)
def test_a_bad_mlx_reply_is_no_answer(reply: str) -> None:
    assert parse_mlx_reply(reply) is None
