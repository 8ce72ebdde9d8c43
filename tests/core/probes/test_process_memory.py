"""What `vramscope run` reads of a process tree, against recorded /proc and /sys trees
(amdgpu fdinfo as the kernel writes it) and against this very process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.probes.drm_fdinfo import drm_usage, parse_fdinfo, read_clients
from core.probes.proc_status import descendants, read_all, read_status
from hip_backend.external.sampler import TreeSampler

PDEV = "0000:c3:00.0"
MIB = 1024 * 1024


def amdgpu_fdinfo(client: int, vram_kib: int, gtt_kib: int, pdev: str = PDEV) -> str:
    """An amdgpu render node's fdinfo, as kernel 6.8 writes it."""
    return (
        "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1099\n"
        f"drm-driver:\tamdgpu\ndrm-client-id:\t{client}\ndrm-pdev:\t{pdev}\npasid:\t32775\n"
        f"drm-memory-vram:\t{vram_kib} KiB\ndrm-memory-gtt:\t{gtt_kib} KiB\n"
        "drm-memory-cpu:\t0 KiB\namd-memory-visible-vram:\t0 KiB\n"
        "drm-engine-gfx:\t1191712 ns\n"
    )


PLAIN_FD = "pos:\t0\nflags:\t0100002\nmnt_id:\t25\nino:\t7\n"


def write_process(
    root: Path, pid: int, ppid: int, fds: dict[int, str], rss_kib: int = 1000, hwm_kib: int = 2000
) -> None:
    folder = root / "proc" / str(pid)
    (folder / "fdinfo").mkdir(parents=True)
    (folder / "status").write_text(
        f"Name:\tpython3\nState:\tS (sleeping)\nPid:\t{pid}\nPPid:\t{ppid}\n"
        f"VmPeak:\t  900000 kB\nVmHWM:\t{hwm_kib:>8} kB\nVmRSS:\t{rss_kib:>8} kB\n"
    )
    for fd, text in fds.items():
        (folder / "fdinfo" / str(fd)).write_text(text)


def write_card(root: Path, vram_used: int, gtt_used: int) -> None:
    device = root / "sys" / "class" / "drm" / "card0" / "device"
    device.mkdir(parents=True)
    for name, value in {
        "mem_info_vram_total": 512 * MIB,
        "mem_info_vram_used": vram_used,
        "mem_info_gtt_total": 64 * 1024 * MIB,
        "mem_info_gtt_used": gtt_used,
    }.items():
        (device / name).write_text(f"{value}\n")


def test_several_clients_of_one_process_each_count_once(tmp_path: Path) -> None:
    # fd 5 and its dup 6 are one client; fd 7 is a second client (a second context).
    write_process(
        tmp_path,
        100,
        1,
        {
            3: PLAIN_FD,
            5: amdgpu_fdinfo(9, 8192, 1024),
            6: amdgpu_fdinfo(9, 8192, 1024),
            7: amdgpu_fdinfo(12, 2048, 4096),
        },
    )
    assert len(read_clients(100, tmp_path) or ()) == 3
    usage = drm_usage([100], tmp_path)
    assert usage.clients == 2
    assert (usage.vram_bytes, usage.gtt_bytes) == ((8192 + 2048) * 1024, (1024 + 4096) * 1024)
    assert usage.total_bytes == (8192 + 2048 + 1024 + 4096) * 1024


def test_a_client_shared_by_a_forked_child_counts_once(tmp_path: Path) -> None:
    write_process(tmp_path, 100, 1, {5: amdgpu_fdinfo(9, 8192, 0)})
    write_process(tmp_path, 101, 100, {5: amdgpu_fdinfo(9, 8192, 0)})
    assert drm_usage([100, 101], tmp_path).vram_bytes == 8192 * 1024


def test_a_process_with_no_drm_fd_has_no_clients(tmp_path: Path) -> None:
    write_process(tmp_path, 100, 1, {0: PLAIN_FD, 1: PLAIN_FD})
    assert read_clients(100, tmp_path) == ()
    assert drm_usage([100], tmp_path).total_bytes == 0
    assert parse_fdinfo(PLAIN_FD) is None


def test_a_gone_process_reads_none_and_another_card_is_left_out(tmp_path: Path) -> None:
    write_process(tmp_path, 100, 1, {5: amdgpu_fdinfo(9, 100, 0), 6: amdgpu_fdinfo(3, 7, 0, "x")})
    assert read_clients(4242, tmp_path) is None
    assert drm_usage([100, 4242], tmp_path, pdev=PDEV).vram_bytes == 100 * 1024


def test_the_tree_below_a_process_is_found_by_ppid(tmp_path: Path) -> None:
    write_process(tmp_path, 10, 1, {})
    write_process(tmp_path, 11, 10, {})
    write_process(tmp_path, 12, 11, {})
    write_process(tmp_path, 20, 1, {})
    statuses = read_all(tmp_path)
    assert sorted(descendants(statuses, 10)) == [11, 12]
    assert statuses[12].hwm_bytes == 2000 * 1024 and statuses[12].rss_bytes == 1000 * 1024


def test_this_process_reads_its_own_resident_memory() -> None:
    me = read_status(os.getpid())
    assert me is not None and me.ppid == os.getppid()
    assert 0 < me.rss_bytes <= me.hwm_bytes


def test_the_sampler_sums_the_tree_and_notes_other_gpu_processes(tmp_path: Path) -> None:
    write_card(tmp_path, 100 * MIB, 10 * MIB)
    write_process(tmp_path, 50, 1, {})  # the holder: not counted
    write_process(tmp_path, 51, 50, {5: amdgpu_fdinfo(9, 8192, 1024)}, hwm_kib=300_000)
    write_process(tmp_path, 52, 51, {5: amdgpu_fdinfo(9, 8192, 1024)}, hwm_kib=5_000)
    write_process(tmp_path, 90, 1, {4: amdgpu_fdinfo(40, 4096, 0)})  # another user of the GPU
    sampler = TreeSampler(50, tmp_path)
    assert sorted(sampler.sample()) == [51, 52]
    (tmp_path / "sys/class/drm/card0/device/mem_info_vram_used").write_text(f"{130 * MIB}\n")
    sampler.sample()
    peaks = sampler.peaks
    assert peaks.host_hwm == 305_000 * 1024
    assert (peaks.drm_vram, peaks.drm_gtt) == (8192 * 1024, 1024 * 1024)
    assert peaks.card_delta == 30 * MIB
    assert peaks.others == {90} and peaks.samples == 2


def test_the_command_before_its_exec_is_not_counted_with_the_holder_s_memory(
    tmp_path: Path,
) -> None:
    # Between the holder's fork and the exec, the command's process runs in the holder's
    # memory and under its command line: a sample then read the holder's 19 MB as the
    # command's (a 9 MB baseline read as 19 MB in tests/hip_backend/test_external_run.py).
    holder = b"python3\0-m\0hip_backend.external.child\0sleep\0001\0"
    write_process(tmp_path, 50, 1, {}, hwm_kib=19_000)
    write_process(tmp_path, 51, 50, {}, hwm_kib=19_000)
    for pid in (50, 51):
        (tmp_path / "proc" / str(pid) / "cmdline").write_bytes(holder)
    sampler = TreeSampler(50, tmp_path)
    assert sampler.sample() == [51]  # alive: the run goes on
    assert sampler.peaks.host_hwm == 0
    write_process_status = tmp_path / "proc" / "51" / "status"
    write_process_status.write_text(write_process_status.read_text().replace("19000", " 9000"))
    (tmp_path / "proc" / "51" / "cmdline").write_bytes(b"sleep\0001\0")  # exec'd
    sampler.sample()
    assert sampler.peaks.host_hwm == 9_000 * 1024


def test_nvml_per_process_memory_sums_each_process_over_gpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    import types

    from core.probes.nvml import read_nvml_processes

    def proc(pid: int, used: int | None) -> types.SimpleNamespace:
        return types.SimpleNamespace(pid=pid, usedGpuMemory=used)

    fake = types.ModuleType("pynvml")
    fake.nvmlInit = lambda: None  # type: ignore[attr-defined]
    fake.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    fake.nvmlDeviceGetCount = lambda: 2  # type: ignore[attr-defined]
    fake.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    compute = {0: [proc(10, 300), proc(11, None)], 1: [proc(10, 200)]}
    fake.nvmlDeviceGetComputeRunningProcesses = lambda h: compute[h]  # type: ignore[attr-defined]
    fake.nvmlDeviceGetGraphicsRunningProcesses = lambda h: []  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert read_nvml_processes() == {10: 500, 11: 0}
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert read_nvml_processes() is None  # not installed
