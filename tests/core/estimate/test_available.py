"""Available memory: flag, env, device limit, unified memory, /proc/meminfo, 0 (spec 1.3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.backend import Backend, detect_backend, resolve_backend
from core.estimate.available import (
    DeviceMemory,
    mlx_device_limit,
    parse_meminfo,
    read_amdgpu_vram,
    resolve_available_memory,
)
from core.units import GIB


def probes(device: int | None = None, unified: int | None = None, meminfo: int | None = None):
    calls: list[str] = []

    def dev(_: Backend) -> DeviceMemory | None:
        calls.append("device")
        return DeviceMemory(device, "test GPU") if device is not None else None

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


def test_meminfo_parsing() -> None:
    text = "MemTotal:       32493820 kB\nMemFree: 1 kB\nMemAvailable:   30000000 kB\n"
    assert parse_meminfo(text) == 30_000_000 * 1024
    assert parse_meminfo("MemTotal:       32493820 kB\n") == 32_493_820 * 1024
    assert parse_meminfo("garbage") is None


def test_amdgpu_sysfs(tmp_path: Path) -> None:
    for card, size in (("card0", "1024\n"), ("card1", "103079215104\n"), ("card2", "junk")):
        d = tmp_path / "class" / "drm" / card / "device"
        d.mkdir(parents=True)
        (d / "mem_info_vram_total").write_text(size)
    got = read_amdgpu_vram(str(tmp_path / "class/drm/card*/device/mem_info_vram_total"))
    assert got is not None and got.total_bytes == 103_079_215_104
    assert read_amdgpu_vram(str(tmp_path / "nothing/*")) is None


def test_backend_detection_from_device_nodes() -> None:
    def only(*paths: str):  # type: ignore[no-untyped-def]
        return lambda p: p in paths

    assert detect_backend(only("/dev/kfd"), "linux", "x86_64").backend is Backend.ROCM
    assert detect_backend(only("/dev/nvidiactl"), "linux", "x86_64").backend is Backend.CUDA
    assert detect_backend(only(), "darwin", "arm64").backend is Backend.METAL
    cpu = detect_backend(only(), "linux", "x86_64")
    assert (cpu.backend, cpu.detected) == (Backend.CPU, True)
    chosen = resolve_backend("rocm")
    assert (chosen.backend, chosen.detected) == (Backend.ROCM, False)
