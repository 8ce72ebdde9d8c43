"""Free and total device memory from sysfs trees: a 24 GiB card, a gfx1151 APU, no GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.backend import Backend
from core.device.memory import (
    device_available,
    gfx_target,
    read_amdgpu_cards,
    read_device_memory,
)
from core.errors import UsageError
from core.units import GIB, MIB

DATA = Path(__file__).parent / "data"


def roots(name: str) -> dict[str, Path]:
    return {"sys_root": DATA / name / "sys", "proc_root": DATA / name / "proc"}


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
    free, _ = device_available("free", Backend.ROCM, **roots("discrete-24gib"))
    total, _ = device_available("total", Backend.ROCM, **roots("discrete-24gib"))
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
    free, _ = device_available("free", Backend.ROCM, **roots("gfx1151-apu"))
    total, _ = device_available("total", Backend.ROCM, **roots("gfx1151-apu"))
    # Other processes hold 30 GiB of GTT: 66 GiB free, below MLX's 76.80 GiB limit.
    assert free.bytes == 66 * GIB
    assert "in use" in free.source and "capped" not in free.source
    assert total.bytes == int(96 * GIB * 0.8)


def test_no_gpu_reads_proc_meminfo_with_a_note() -> None:
    assert read_amdgpu_cards(DATA / "no-gpu" / "sys") == []
    device = read_device_memory(Backend.ROCM, **roots("no-gpu"))
    assert device is not None
    assert (device.total, device.free) == (16384000 * 1024, 8192000 * 1024)
    assert device.notes and "no amdgpu card" in device.notes[0]
    free, _ = device_available("free", Backend.CPU, **roots("no-gpu"))
    assert free.bytes == 8192000 * 1024  # MemAvailable, no 80% rule on the CPU


def test_nothing_readable_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no device memory is readable"):
        device_available("free", Backend.CPU, sys_root=tmp_path, proc_root=tmp_path)


@pytest.mark.parametrize(
    ("version", "name"),
    [(110501, "gfx1151"), (110000, "gfx1100"), (90402, "gfx942"), (90010, "gfx90a")],
)
def test_gfx_target_names(version: int, name: str) -> None:
    assert gfx_target(version) == name
