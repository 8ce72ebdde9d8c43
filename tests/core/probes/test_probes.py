"""The probes' readings: /proc/meminfo text, amdgpu sysfs, device nodes."""

from __future__ import annotations

from pathlib import Path

from core.backend import Backend
from core.probes.amdgpu_sysfs import read_amdgpu_vram
from core.probes.device_nodes import detect_backend
from core.probes.meminfo import parse_meminfo


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
    (tmp_path / "class/drm/card1/device/mem_info_vram_used").write_text("2147483648\n")
    got = read_amdgpu_vram(str(tmp_path / "class/drm/card*/device/mem_info_vram_total"))
    assert got is not None and got.total_bytes == 103_079_215_104
    assert got.used_bytes == 2 << 30
    assert read_amdgpu_vram(str(tmp_path / "nothing/*")) is None


def test_backend_detection_from_device_nodes() -> None:
    def only(*paths: str):  # type: ignore[no-untyped-def]
        return lambda p: p in paths

    assert detect_backend(only("/dev/kfd"), "linux", "x86_64").backend is Backend.ROCM
    assert detect_backend(only("/dev/nvidiactl"), "linux", "x86_64").backend is Backend.CUDA
    assert detect_backend(only(), "darwin", "arm64").backend is Backend.METAL
    cpu = detect_backend(only(), "linux", "x86_64")
    assert (cpu.backend, cpu.detected) == (Backend.CPU, True)
