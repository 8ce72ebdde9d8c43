"""A sample that reads the command's status before its exec and its command line after
(#41, the flaky `test_a_freed_allocation_is_the_peak_over_the_interpreter_s_own`).

The holder starts the command with a `preexec_fn`, so `subprocess` forks (no vfork):
until its exec the command's process is a copy of the holder, whose `VmHWM` it shows as
its own (13.9 MB, read here from /proc in that window; the command's interpreter alone
is 8.9 MB). The sampler leaves that process out while its command line is still the
holder's, but it read every status first and the command line after: when the exec
came between the two reads (more often on a loaded machine), the holder's copy counted
as the command's. In the baseline run that raises the figure subtracted by about 4-5
MB, which is how a 200 MB allocation read 195.8 MB over it once. The exec is played
here on a recorded /proc, between the two reads, so the race is taken every time."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.probes import proc_status
from hip_backend.external import sampler
from hip_backend.external.sampler import TreeSampler

HOLDER, COMMAND = 100, 101
HOLDER_CMDLINE = b"/usr/bin/python3\0-m\0hip_backend.external.child\0python3\0-c\0pass\0"
COMMAND_CMDLINE = b"python3\0-c\0pass\0"
HOLDER_COPY_KIB = 13_944  # the holder's pages, shown by its fork before the exec
INTERPRETER_KIB = 8_900  # the command's own, after it


def status(ppid: int, kib: int) -> str:
    return f"Name:\tpython3\nPPid:\t{ppid}\nVmHWM:\t{kib} kB\nVmRSS:\t{kib} kB\n"


def write_process(root: Path, pid: int, ppid: int, kib: int, cmdline: bytes) -> None:
    folder = root / "proc" / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "status").write_text(status(ppid, kib))
    (folder / "cmdline").write_bytes(cmdline)


def test_a_status_read_before_the_exec_never_counts_as_the_command_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_process(tmp_path, HOLDER, 1, 21_000, HOLDER_CMDLINE)
    write_process(tmp_path, COMMAND, HOLDER, HOLDER_COPY_KIB, HOLDER_CMDLINE)  # pre-exec
    tree = TreeSampler(HOLDER, tmp_path)
    read_cmdline = proc_status.read_cmdline

    def exec_then_read(pid: int, root: Path = Path("/")) -> bytes | None:
        if pid == COMMAND:  # the exec lands between the status read and this one
            write_process(tmp_path, COMMAND, HOLDER, INTERPRETER_KIB, COMMAND_CMDLINE)
        return read_cmdline(pid, root)

    monkeypatch.setattr(sampler, "read_cmdline", exec_then_read)
    assert tree.sample() == [COMMAND]
    assert tree.peaks.host_hwm == INTERPRETER_KIB * 1024
    assert tree.peaks.host_rss == INTERPRETER_KIB * 1024


def test_a_process_seen_before_its_exec_is_left_out_then_counted(tmp_path: Path) -> None:
    write_process(tmp_path, HOLDER, 1, 21_000, HOLDER_CMDLINE)
    write_process(tmp_path, COMMAND, HOLDER, HOLDER_COPY_KIB, HOLDER_CMDLINE)
    tree = TreeSampler(HOLDER, tmp_path)
    tree.sample()
    assert tree.peaks.host_hwm == 0  # the holder's copy: not the command's
    write_process(tmp_path, COMMAND, HOLDER, INTERPRETER_KIB, COMMAND_CMDLINE)
    tree.sample()
    assert tree.peaks.host_hwm == INTERPRETER_KIB * 1024
