"""This process's device memory from recorded amdgpu fdinfo texts, and the sysfs card of
torch's device picked by PCI bus id or through the visible-device variables (fake
sysfs trees). No GPU needed: the readers take their roots as parameters."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hip_backend.torch_engine.gpu_memory import (
    amdgpu_cards,
    parse_size,
    physical_index,
    pick_card,
    read_process_drm_memory,
)

DATA = Path(__file__).parent / "data"
KIB, MIB = 1 << 10, 1 << 20


def fake_proc(tmp_path: Path, fds: dict[str, str]) -> Path:
    """A /proc/self with an fdinfo folder holding the recorded texts under fd numbers."""
    fdinfo = tmp_path / "proc" / "self" / "fdinfo"
    fdinfo.mkdir(parents=True)
    for fd, recorded in fds.items():
        shutil.copy(DATA / recorded, fdinfo / fd)
    return fdinfo.parent


def test_vram_and_gtt_are_summed_over_clients_and_each_client_counts_once(
    tmp_path: Path,
) -> None:
    proc = fake_proc(
        tmp_path,
        {
            "0": "fdinfo-plain-file.txt",
            "5": "fdinfo-amdgpu-6.8.txt",
            "6": "fdinfo-amdgpu-6.8.txt",  # a dup of fd 5: same drm-client-id 96
            "9": "fdinfo-amdgpu-6.8-second-client.txt",
            "11": "fdinfo-i915.txt",
        },
    )
    memory = read_process_drm_memory(proc)
    assert memory is not None
    assert memory.clients == 2
    assert memory.vram_bytes == (1032 + 4194304) * KIB
    assert memory.gtt_bytes == (8192 + 1048576) * KIB
    assert memory.total_bytes == memory.vram_bytes + memory.gtt_bytes


def test_only_the_device_with_the_bus_id_counts_and_newer_kernel_keys_are_read(
    tmp_path: Path,
) -> None:
    proc = fake_proc(
        tmp_path, {"5": "fdinfo-amdgpu-6.8.txt", "7": "fdinfo-amdgpu-6.12-other-card.txt"}
    )
    other = read_process_drm_memory(proc, bus_id="0000:03:00.0")
    assert other is not None
    assert (other.vram_bytes, other.gtt_bytes, other.clients) == (256 * MIB, 2 * MIB, 1)
    apu = read_process_drm_memory(proc, bus_id="C3:00.0")  # no domain, upper case
    assert apu is not None
    assert (apu.vram_bytes, apu.gtt_bytes) == (1032 * KIB, 8192 * KIB)
    assert read_process_drm_memory(proc, bus_id="0000:44:00.0") is None


def test_no_drm_client_or_no_fdinfo_reads_as_none(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {"0": "fdinfo-plain-file.txt", "3": "fdinfo-i915.txt"})
    assert read_process_drm_memory(proc) is None
    assert read_process_drm_memory(tmp_path / "missing") is None


def test_the_real_proc_of_a_cpu_process_has_no_amdgpu_client() -> None:
    assert read_process_drm_memory() is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1032 KiB", 1032 * KIB), ("2 MiB", 2 * MIB), ("0", 0), ("12 kB", 12 * KIB), ("x", None)],
)
def test_sizes_in_fdinfo_units(text: str, expected: int | None) -> None:
    assert parse_size(text) == expected


def fake_sysfs(tmp_path: Path, bus_ids: list[str]) -> Path:
    """/sys/class/drm with card<N>/device linked to a PCI folder with amdgpu files, plus a
    render node and a card without amdgpu memory files (another driver)."""
    drm = tmp_path / "sys" / "class" / "drm"
    drm.mkdir(parents=True)
    for n, bus in enumerate(bus_ids):
        pci = tmp_path / "sys" / "devices" / "pci0000:00" / bus
        pci.mkdir(parents=True)
        (pci / "mem_info_vram_used").write_text(f"{(n + 1) * 1000}\n")
        (pci / "mem_info_vram_total").write_text("68719476736\n")
        (drm / f"card{n}").mkdir()
        (drm / f"card{n}" / "device").symlink_to(pci)
    other = tmp_path / "sys" / "devices" / "pci0000:00" / "0000:00:02.0"
    other.mkdir(parents=True)
    (drm / "card9").mkdir()
    (drm / "card9" / "device").symlink_to(other)
    (drm / "renderD128").mkdir()
    return drm


def test_the_card_is_the_one_with_the_devices_bus_id(tmp_path: Path) -> None:
    # card0 is the later bus: the order of card numbers says nothing about PCI order.
    drm = fake_sysfs(tmp_path, ["0000:c3:00.0", "0000:03:00.0"])
    assert [bus for bus, _ in amdgpu_cards(drm)] == ["0000:03:00.0", "0000:c3:00.0"]
    picked = pick_card("0000:C3:00.0", 0, {}, drm)
    assert picked is not None
    device, how = picked
    assert device == drm / "card0" / "device"
    assert how == "bus id 0000:c3:00.0"
    assert (device / "mem_info_vram_used").read_text() == "1000\n"
    assert pick_card("0000:44:00.0", 0, {}, drm) is None  # never a wrong card


def test_without_a_bus_id_the_visible_devices_map_torchs_index(tmp_path: Path) -> None:
    drm = fake_sysfs(tmp_path, ["0000:03:00.0", "0000:43:00.0", "0000:83:00.0"])
    by_index = dict(amdgpu_cards(drm))
    picked = pick_card(None, 0, {"HIP_VISIBLE_DEVICES": "2"}, drm)
    assert picked is not None
    assert picked[0] == by_index["0000:83:00.0"]
    picked = pick_card(None, 1, {"ROCR_VISIBLE_DEVICES": "0,2", "HIP_VISIBLE_DEVICES": "1,0"}, drm)
    assert picked is not None  # torch 1 -> HIP entry 0 -> ROCR entry 0 -> card 0
    assert picked[0] == by_index["0000:03:00.0"]
    assert pick_card(None, 0, {}, drm) is not None
    assert pick_card(None, 3, {}, drm) is None


@pytest.mark.parametrize(
    ("index", "env", "expected"),
    [
        (0, {}, 0),
        (1, {"CUDA_VISIBLE_DEVICES": "3,1"}, 1),
        (0, {"HIP_VISIBLE_DEVICES": "2", "CUDA_VISIBLE_DEVICES": "0"}, 2),  # HIP wins
        (0, {"ROCR_VISIBLE_DEVICES": "1"}, 1),
        (1, {"HIP_VISIBLE_DEVICES": "0"}, None),  # hidden
        (0, {"HIP_VISIBLE_DEVICES": "GPU-5a3b"}, None),  # UUIDs: cannot map to PCI order
        (0, {"CUDA_VISIBLE_DEVICES": ""}, None),
    ],
)
def test_visible_device_lists(index: int, env: dict[str, str], expected: int | None) -> None:
    assert physical_index(index, env) == expected
