"""`inspect --memory-limit free|total`: the device's figure in mlxcel's banner, and
vramscope's own line and `device` key saying which device and figure it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.device import reading
from core.units import GIB
from tui.cli import main

DATA = Path(__file__).parents[2] / "core" / "device" / "data"
QWEN = "Qwen/Qwen2.5-7B-Instruct"


@pytest.fixture
def apu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded gfx1151 APU: 96 GiB of GTT, 30 GiB of it used by other processes."""
    monkeypatch.setattr(reading, "SYS_ROOT", DATA / "gfx1151-apu" / "sys")
    monkeypatch.setattr(reading, "PROC_ROOT", DATA / "gfx1151-apu" / "proc")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def inspect_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, _ = run(capsys, "inspect", QWEN, "--backend", "rocm", "--json", *argv)
    assert code == 0
    report: dict[str, Any] = json.loads(out)
    return report


@pytest.mark.usefixtures("apu")
def test_free_is_the_apu_s_free_gtt_in_the_banner(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "inspect", QWEN, "--backend", "rocm", "--memory-limit", "free")
    assert code == 0
    assert f"  Available:       66.00 GiB ({66 * GIB} bytes)" in out.splitlines()
    lines = [line for line in out.splitlines() if line.startswith("vramscope ")]
    assert lines[0].startswith(f"vramscope --memory-limit free: 66.00 GiB ({66 * GIB} bytes)")
    assert "Radeon 8060S" in lines[1] or "gfx1151" in lines[1]
    assert "total 96.00 GiB, used by others 30.00 GiB, free 66.00 GiB" in lines[1]


@pytest.mark.usefixtures("apu")
def test_total_is_mlx_s_80_percent_of_the_pool(capsys: pytest.CaptureFixture[str]) -> None:
    report = inspect_json(capsys, "--memory-limit", "total")
    assert report["budget_bytes"] == int(96 * GIB * 0.8)
    assert report["device"]["memory_limit"] == "total"


@pytest.mark.usefixtures("apu")
def test_mlxcel_s_keys_are_those_of_the_same_size_typed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    free = inspect_json(capsys, "--memory-limit", "free")
    typed = inspect_json(capsys, "--memory-limit", str(66 * GIB))
    answered, _ = free.pop("device"), typed.pop("device")
    assert free == typed  # every mlxcel key and value, unchanged
    assert list(free) == list(typed)
    assert answered["available_bytes"] == 66 * GIB
    device = answered["reading"]
    assert (device["total_bytes"], device["used_bytes"], device["free_bytes"]) == (
        96 * GIB,
        30 * GIB,
        66 * GIB,
    )
    assert "gfx1151" in device["name"] and "GTT" in device["how"]


def test_nothing_readable_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(reading, "SYS_ROOT", tmp_path)
    monkeypatch.setattr(reading, "PROC_ROOT", tmp_path)
    monkeypatch.setattr(reading, "read_mlx_device", lambda: None)
    code, out, err = run(capsys, "inspect", QWEN, "--backend", "cpu", "--memory-limit", "free")
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and "no device memory is readable" in err


@pytest.mark.parametrize("which", ["free", "total"])
def test_cuda_without_an_nvidia_gpu_is_one_line_never_the_host_s_ram(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """The recorded machine has /proc/meminfo (127 GiB) and no NVIDIA GPU: NVML and
    nvidia-smi do not answer, as on a machine without one (#41)."""
    monkeypatch.setattr(reading, "SYS_ROOT", DATA / "no-gpu" / "sys")
    monkeypatch.setattr(reading, "PROC_ROOT", DATA / "no-gpu" / "proc")
    monkeypatch.setattr(reading, "read_mlx_device", lambda: None)
    monkeypatch.setattr(reading, "read_nvml", lambda: None)
    monkeypatch.setattr(reading, "query_nvidia_smi", lambda timeout: None)
    code, out, err = run(capsys, "inspect", QWEN, "--backend", "cuda", "--memory-limit", which)
    assert (code, out) == (2, "")
    assert err == (
        f"vramscope: error: --memory-limit: {which}: the CUDA device cannot be read (neither "
        "NVML, pip install 'vramscope[nvidia]', nor nvidia-smi answered: no NVIDIA GPU "
        "here?); give a size instead\n"
    )


@pytest.mark.parametrize("which", ["free", "total"])
@pytest.mark.parametrize("command", ["inspect", "fit"])
def test_rocm_without_an_amd_gpu_is_one_line_never_the_host_s_ram(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, which: str, command: str
) -> None:
    """The recorded machine has /proc/meminfo (127 GiB), no amdgpu card in its sysfs
    and no MLX GPU: `--backend rocm` names what it did not find and where it looked
    (#41), where it used the host's RAM as the GPU's."""
    sys_root = DATA / "no-gpu" / "sys"
    monkeypatch.setattr(reading, "SYS_ROOT", sys_root)
    monkeypatch.setattr(reading, "PROC_ROOT", DATA / "no-gpu" / "proc")
    monkeypatch.setattr(reading, "read_mlx_device", lambda: None)
    monkeypatch.setattr(reading, "read_nvml", lambda: None)
    monkeypatch.setattr(reading, "query_nvidia_smi", lambda timeout: None)
    argv = [command, QWEN] if command == "inspect" else [command]
    code, out, err = run(capsys, *argv, "--backend", "rocm", "--memory-limit", which)
    assert (code, out) == (2, "")
    assert err == (
        f"vramscope: error: --memory-limit: {which}: no AMD GPU found (no amdgpu card "
        f"reports its memory in {sys_root / 'class' / 'drm'}, and MLX has no GPU device); "
        "give a size instead\n"
    )
