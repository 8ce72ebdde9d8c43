"""Available memory: flag, env, device limit, unified memory, /proc/meminfo, 0 (spec 1.3)."""

from __future__ import annotations

import pytest

from core.backend import Backend
from core.device_memory import DeviceMemory, mlx_device_limit
from core.estimate.available import resolve_available_memory
from core.units import GIB


def probes(device: int | None = None, unified: int | None = None, meminfo: int | None = None):
    calls: list[str] = []

    def dev(_: Backend) -> DeviceMemory | None:
        calls.append("device")
        if device is None:
            return None
        # used by others does not count in mlxcel's rule: 80% of the total
        return DeviceMemory("test GPU", device, device // 2, "test", 0.8, pool_name="VRAM")

    def uni() -> int | None:
        calls.append("unified")
        return unified

    def mem() -> int | None:
        calls.append("meminfo")
        return meminfo

    return calls, {"device_probe": dev, "unified_probe": uni, "meminfo_probe": mem}


def test_env_limit_wins_over_every_other_source() -> None:
    calls, p = probes(device=96 * GIB, unified=96, meminfo=31 * GIB)
    got = resolve_available_memory(Backend.ROCM, env_limit="4GB", **p)
    assert (got.bytes, got.source) == (4 * GIB, "MLXCEL_MEMORY_LIMIT")
    assert calls == []  # answered without touching any probe


def test_flag_beats_env() -> None:
    _, p = probes()
    got = resolve_available_memory(Backend.ROCM, cli_limit=2 * GIB, env_limit="4GB", **p)
    assert got.bytes == 2 * GIB


def test_device_limit_is_mlx_80_percent() -> None:
    _, p = probes(device=103_079_215_104, meminfo=31 * GIB)
    got = resolve_available_memory(Backend.ROCM, **p)
    assert got.bytes == 82_463_372_083  # 76.80 GiB on the 96 GiB gfx1151
    assert mlx_device_limit(103_079_215_104) == 82_463_372_083


def test_unified_memory_is_step_three() -> None:
    calls, p = probes(unified=96, meminfo=31 * GIB)
    assert resolve_available_memory(Backend.METAL, **p).bytes == 96 * GIB
    assert calls == ["device", "unified"]
    _, p = probes(meminfo=31 * GIB)
    assert resolve_available_memory(Backend.CPU, **p).bytes == 31 * GIB


def test_nothing_detectable_is_zero() -> None:
    _, p = probes()
    assert resolve_available_memory(Backend.CPU, **p).bytes == 0


def test_zero_device_size_counts_as_unset() -> None:
    _, p = probes(device=0, meminfo=31 * GIB)
    assert resolve_available_memory(Backend.ROCM, **p).bytes == 31 * GIB


@pytest.mark.parametrize("raw", ["0", "none", "", "0GB"])
def test_explicitly_unset_env_needs_no_warning(raw: str) -> None:
    _, p = probes(meminfo=GIB)
    got = resolve_available_memory(Backend.CPU, env_limit=raw, **p)
    assert (got.bytes, got.warning) == (GIB, None)


@pytest.mark.parametrize("raw", ["-1GB", "NaNGB", "lots", "1.5"])
def test_invalid_env_falls_back_with_one_warning(raw: str) -> None:
    _, p = probes(meminfo=GIB)
    got = resolve_available_memory(Backend.CPU, env_limit=raw, **p)
    assert got.bytes == GIB
    assert got.warning is not None and "\n" not in got.warning
    assert f'MLXCEL_MEMORY_LIMIT="{raw}"' in got.warning
