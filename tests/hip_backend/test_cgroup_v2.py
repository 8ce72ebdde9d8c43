"""The cgroup v2 path of `vramscope run` on a recorded tree (#41): this project's
machine has the hybrid layout, whose unified hierarchy has no memory controller (only
`hugetlb`; memory is cgroup v1's), so no live run reads a `memory.peak`. `cgroup2_dir` reads
`/proc/self/cgroup` and `mountinfo` (its `proc` root is the override), and a run's tree
reads its group's `cgroup.procs` and `memory.peak` from the folder it is handed: here
folders written as a cgroup v2 of a pure and of a hybrid layout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.measurement.command_flags import EngineFamily
from core.measurement.fields import ExternalFields
from hip_backend.external.record import HOST_KIND, external_peak
from hip_backend.external.run import CommandRun
from hip_backend.external.sampler import TreePeaks
from hip_backend.external.tree import RunTree, cgroup2_dir

GROUP = "/user.slice/user-1000.slice/session-2.scope"
V1_MOUNTS = (
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "40 31 0:37 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
)


def proc_tree(tmp_path: Path, cgroup: str, mountinfo: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(cgroup)
    (proc / "self" / "mountinfo").write_text(mountinfo)
    return proc


def test_a_pure_cgroup_v2_is_found_below_its_mount(tmp_path: Path) -> None:
    mount = tmp_path / "fs" / "cgroup"
    mounts = f"29 23 0:26 / {mount} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    proc = proc_tree(tmp_path, f"0::{GROUP}\n", mounts)
    assert cgroup2_dir(proc) == mount / GROUP.lstrip("/")


def test_the_hybrid_layout_s_unified_mount_is_the_one_read(tmp_path: Path) -> None:
    unified = tmp_path / "fs" / "cgroup" / "unified"
    mounts = V1_MOUNTS + f"30 31 0:27 / {unified} rw,nosuid - cgroup2 cgroup2 rw\n"
    proc = proc_tree(tmp_path, f"12:memory:{GROUP}\n1:name=systemd:{GROUP}\n0::{GROUP}\n", mounts)
    assert cgroup2_dir(proc) == unified / GROUP.lstrip("/")


def test_a_mount_that_does_not_show_the_group_is_passed_over(tmp_path: Path) -> None:
    """A container's cgroup2 mount rooted at another group (its root is not above ours)."""
    mounts = "29 23 0:26 /system.slice/other /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    assert cgroup2_dir(proc_tree(tmp_path, f"0::{GROUP}\n", mounts)) is None


def test_cgroup_v1_alone_has_no_cgroup_v2(tmp_path: Path) -> None:
    """This machine's layout: no `0::` line, no cgroup2 mount."""
    proc = proc_tree(tmp_path, "9:name=systemd:/\n8:pids:/\n4:memory:/\n", V1_MOUNTS)
    assert cgroup2_dir(proc) is None


def group(tmp_path: Path, peak: bytes | None, procs: str = "4242\n") -> Path:
    folder = tmp_path / "vramscope-run-1-abc"
    (folder / "inner").mkdir(parents=True)  # a `vramscope run` inside the command
    (folder / "cgroup.procs").write_text(procs)
    (folder / "inner" / "cgroup.procs").write_text("4343\n")
    if peak is not None:
        (folder / "memory.peak").write_bytes(peak)
    return folder


def test_the_group_s_processes_and_memory_peak_are_read(tmp_path: Path) -> None:
    tree = RunTree("token", group(tmp_path, b"314572800\n"))
    assert tree.memory_peak() is None  # no process seen in it yet: the holder never joined
    assert {4242, 4343} <= tree.members(pids=[])
    assert tree.cgroup_seen
    assert tree.memory_peak() == 314_572_800


@pytest.mark.parametrize(
    "peak",
    [None, b"", b"max\n", b"-1\n", b"1" * 5000 + b"\n", b"18446744073709551616\n", b"\xd9\xa3\n"],
    ids=["missing", "empty", "max", "negative", "5000-digits", "past-u64", "arabic-digit"],
)
def test_a_memory_peak_that_is_not_a_u64_is_none(tmp_path: Path, peak: bytes | None) -> None:
    tree = RunTree("token", group(tmp_path, peak), seen=True)
    assert tree.memory_peak() is None


def test_a_fifo_in_memory_peak_s_place_is_none_not_a_hang(tmp_path: Path) -> None:
    folder = group(tmp_path, None)
    os.mkfifo(folder / "memory.peak")
    assert RunTree("token", folder, seen=True).memory_peak() is None


def test_memory_peak_is_recorded_beside_the_host_figure_never_as_it(tmp_path: Path) -> None:
    """`memory.peak` counts the group's page cache too: the headline stays the sum of the
    processes' VmHWM (or ru_maxrss), and the cgroup's figure goes beside it."""
    run = CommandRun(
        exit_status=0,
        peaks=TreePeaks(host_hwm=300_000_000, host_rss=290_000_000, samples=4),
        wall_seconds=1.0,
        interval_s=0.25,
        maxrss_bytes=None,
        followed_by=f"cgroup v2 {tmp_path}",
        cgroup_peak_bytes=420_000_000,
    )
    peak = external_peak(
        run,
        ["python3", "-c", "x"],
        model="m",
        family=EngineFamily.OTHER,
        context_tokens=8192,
        kv_int8=False,
        inflight_mib=0,
        estimate_for=lambda _backend: None,
    )
    assert (peak.peak_bytes, peak.peak_kind) == (300_000_000, HOST_KIND)
    fields = peak.fields
    assert isinstance(fields, ExternalFields)
    assert (fields.cgroup_peak_bytes, fields.followed_by) == (420_000_000, run.followed_by)
