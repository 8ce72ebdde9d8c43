"""`vramscope run` follows every process it starts and stops them all, and the command
runs as if alone (#41 items 3-4): real shell commands in real child processes.

- a double-forked or `setsid` process is sampled (within 2% of the same command
  unforked) and killed at the end, followed by the run's cgroup v2 where this machine
  gives one and by the environment marker alone (both tested);
- the holder is in a process group of its own: `kill 0` in the command reaches the
  command alone;
- a stopped command is said within one interval, and SIGKILL to vramscope then takes
  every process with it;
- a command shorter than one interval is "not measured" or its own ru_maxrss, never 0 B.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hip_backend import run_command
from hip_backend.external.tree import cgroup2_dir, make_cgroup
from tests.hip_backend.test_dies_with_parent import left_after_grace

ROOT = Path(__file__).resolve().parents[2]
ALLOCATED = 300_000_000
PY = sys.executable
# The allocation says when it is made (a file), and the command waits for that, then
# a second: a fixed sleep raced the interpreter's start on a loaded machine (the run
# ended, and its leftovers were killed, before the allocation was whole).
ALLOCATE = (
    f'{PY} -c \'import sys, time; x = b"a" * {ALLOCATED}; '
    'open(sys.argv[1], "w").close(); time.sleep(2)\' {made}'
)
WAIT = "while [ ! -e {made} ]; do sleep 0.05; done; sleep 1"


def double_fork(made: Path) -> str:
    """The issue's repro: the allocation in a double-forked process (a subshell that
    exits at once, leaving its child to init), the command itself only waiting."""
    return f"({ALLOCATE} &); {WAIT}".format(made=made)


def setsid(made: Path) -> str:
    return f"setsid {ALLOCATE} & {WAIT}".format(made=made)


def unforked(made: Path) -> str:
    return ALLOCATE.format(made=made)


# A command that leaves a `setsid` child and a double-forked one behind, writing
# their pids (and its own) to the file it is given. Each carries that file's path (the
# setsid one in its environment, the forked one in its command line), so that a test
# looks for its own leftovers only: other runs may be going on beside it.
LEAVES_BEHIND = (
    "import os, subprocess, sys, time\n"
    "os.environ['LEFT_BY'] = sys.argv[1]\n"
    "kept = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    if os.fork():\n"
    "        os._exit(0)\n"
    "    time.sleep(60)\n"
    "    os._exit(0)\n"
    "os.waitpid(pid, 0)\n"
    "open(sys.argv[1] + '.tmp', 'w').write(f'{os.getpid()} {kept.pid}')\n"
    "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "time.sleep(float(sys.argv[2]))\n"
)


@pytest.fixture(params=[True, False], ids=["cgroup", "marker"])
def cgroup(request: pytest.FixtureRequest) -> bool:
    """Follow by the run's cgroup v2 (skipped where none can be made) or the marker."""
    if request.param:
        made = make_cgroup()
        if made is None:
            pytest.skip("this machine gives no cgroup v2 that vramscope may make")
        made.rmdir()
    return bool(request.param)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def with_token(left_by: Path, token_env: str = "VRAMSCOPE_RUN_TOKEN") -> list[int]:
    """Live processes that carry a run token and `left_by` (LEAVES_BEHIND's file) in
    their environment or command line: this test's leftovers, not another run's."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                environ = (entry / "environ").read_bytes()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            tag = str(left_by).encode()
            if f"{token_env}=".encode() in environ and (tag in environ or tag in cmdline):
                found.append(int(entry.name))
    return [p for p in found if alive(p)]


def cgroups_left(pid: int) -> list[Path]:
    """The cgroups a vramscope (by pid) made that are still there, once none is or 5 s
    have passed (the holder removes one as it ends)."""
    parent = cgroup2_dir()
    if parent is None:
        return []
    deadline = time.monotonic() + 5
    while (left := list(parent.glob(f"vramscope-run-{pid}-*"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def vramscope(*argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "tui", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


@pytest.fixture(scope="module")
def alone_peaks() -> dict[bool, int]:
    """The unforked allocation's host peak, by the way it was followed (cgroup or not):
    each kind's is run once, for both shapes that leave the tree."""
    return {}


@pytest.mark.parametrize("shape", [double_fork, setsid], ids=["double-fork", "setsid"])
def test_a_process_that_leaves_the_tree_is_sampled_within_2_percent(
    shape: Callable[[Path], str], cgroup: bool, tmp_path: Path, alone_peaks: dict[bool, int]
) -> None:
    if cgroup not in alone_peaks:
        alone = run_command(["sh", "-c", unforked(tmp_path / "alone")], 0.1, cgroup=cgroup)
        assert alone.exit_status == 0
        alone_peaks[cgroup] = alone.host_peak_bytes
    forked = run_command(["sh", "-c", shape(tmp_path / "forked")], 0.1, cgroup=cgroup)
    assert forked.exit_status == 0
    assert ("cgroup v2" in forked.followed_by) is cgroup, forked.followed_by
    figure, baseline = forked.host_peak_bytes, alone_peaks[cgroup]
    assert baseline > ALLOCATED
    assert abs(figure - baseline) <= 0.02 * baseline, (figure, baseline)


def test_a_run_inside_the_command_is_followed_too(cgroup: bool, tmp_path: Path) -> None:
    # `vramscope run` inside the command makes a tree of its own (its token, its cgroup
    # below this run's): the double-forked allocation in it is still this run's.
    inner = [
        PY,
        "-m",
        "tui",
        "run",
        "--no-history",
        "--",
        "sh",
        "-c",
        double_fork(tmp_path / "made"),
    ]
    outer = run_command(inner, 0.1, cgroup=cgroup)
    assert outer.exit_status == 0
    assert outer.peaks.host_hwm > ALLOCATED


def test_what_the_command_leaves_behind_is_killed_at_its_end(tmp_path: Path, cgroup: bool) -> None:
    pids = tmp_path / "pids"
    done = run_command([PY, "-c", LEAVES_BEHIND, str(pids), "0.3"], 0.05, cgroup=cgroup)
    assert done.exit_status == 0
    command, kept = map(int, pids.read_text().split())
    assert not alive(command) and not alive(kept)
    assert with_token(pids) == []  # the double-forked one too (it carries the token)
    if cgroup:
        group = Path(done.followed_by.removeprefix("cgroup v2 "))
        assert not group.exists()  # removed once empty


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_run_takes_setsid_and_double_forked_children_with_it(
    tmp_path: Path, signum: int, status: int
) -> None:
    pids = tmp_path / "pids"
    ran = vramscope("run", "--no-history", "--", PY, "-c", LEAVES_BEHIND, str(pids), "60")
    deadline = time.monotonic() + 60
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    command, kept = map(int, pids.read_text().split())
    ran.send_signal(signum)
    assert ran.wait(timeout=30) == status
    assert left_after_grace(ran.pid) == []
    assert not alive(command) and not alive(kept) and with_token(pids) == []
    assert cgroups_left(ran.pid) == []


def test_a_killed_vramscope_takes_setsid_children_with_it(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    ran = vramscope("run", "--no-history", "--", PY, "-c", LEAVES_BEHIND, str(pids), "60")
    deadline = time.monotonic() + 60
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    command, kept = map(int, pids.read_text().split())
    ran.kill()  # no clean-up of its own: the holder's parent watch ends the run
    ran.wait(timeout=10)
    assert left_after_grace(ran.pid) == []
    assert not alive(command) and not alive(kept) and with_token(pids) == []
    assert cgroups_left(ran.pid) == []  # the holder removed the run's cgroup


def test_the_holder_is_in_a_group_apart_from_the_command_s(tmp_path: Path) -> None:
    groups = tmp_path / "groups"
    report = (
        "import os, sys; open(sys.argv[1], 'w').write(f'{os.getpgrp()} {os.getpgid(os.getppid())}')"
    )
    assert run_command([PY, "-c", report, str(groups)]).exit_status == 0
    command_group, holder_group = groups.read_text().split()
    assert command_group != holder_group
    # `kill 0` in the command reaches the command's group alone: a command that ignores
    # SIGTERM and whose child kills the group exits 0, as it would alone.
    kills_its_group = "trap '' TERM; sh -c 'kill 0'; exit 0"
    assert run_command(["sh", "-c", kills_its_group]).exit_status == 0


def test_sigint_to_the_command_s_group_never_reaches_the_holder() -> None:
    for _ in range(4):
        ran = vramscope("run", "--no-history", "--", "sh", "-c", "trap '' INT; kill -INT 0; exit 0")
        _, err = ran.communicate(timeout=60)
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        assert ran.returncode == 0


def test_a_stopped_command_is_said_and_a_killed_vramscope_leaves_nothing() -> None:
    ran = vramscope("run", "--no-history", "--interval", "0.1", "--", "sh", "-c", "kill -STOP 0")
    lines: queue.Queue[str] = queue.Queue()
    stream = ran.stderr
    assert stream is not None
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    said = ""
    try:
        while "is stopped" not in said:  # the limit only stops a broken run from hanging
            said = lines.get(timeout=60)
    except queue.Empty:
        said = "(nothing said)"
    finally:
        ran.kill()
        ran.wait(timeout=10)
    assert "the command is stopped (SIGSTOP or Ctrl-Z)" in said
    assert left_after_grace(ran.pid) == []
    assert cgroups_left(ran.pid) == []


def test_a_command_shorter_than_one_interval_is_never_a_0_byte_peak(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path))
    ran = vramscope("run", "--json", "--interval", "30", "--", "true", env=env)
    out, err = ran.communicate(timeout=60)
    assert ran.returncode == 0, err
    document = json.loads(out)
    history = tmp_path / "vramscope" / "measurements.jsonl"
    (line,) = history.read_bytes().splitlines()  # recorded either way
    record = json.loads(line)
    if "error" in document:  # nothing of its own was read: recorded "not measured"
        assert document["error"]["kind"] == "not_measured"
        assert record["kind"] == "not_measured" and record["result"]["peak_bytes"] is None
        assert record["result"]["failure"]["exit_status"] == 0
        table = vramscope("table", "--history", "true", env=env)
        shown, err = table.communicate(timeout=60)
        assert table.returncode == 0, err
        (row,) = [r for r in shown.splitlines() if r.startswith("| true |")]
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[6:] == ["not measured", "-", "-", "-", "-"]  # peak ... covered
        assert "1 run(s) not measured" in shown and "covers" not in shown
        fit = vramscope("calibrate", env=env)  # never fitted: nothing to calibrate on
        _, err = fit.communicate(timeout=60)
        assert fit.returncode == 2 and "no measured runs" in err
    else:  # its own ru_maxrss
        assert record["kind"] == "measurement"
        assert (
            document["measured"]["peak_bytes"] == document["measured"]["extra"]["maxrss_bytes"] > 0
        )
    # A short command that allocates: its own ru_maxrss (wait4), no sample needed.
    short = run_command([PY, "-c", f"x = b'a' * {ALLOCATED}"], 30)
    assert short.peaks.samples == 0 and short.measured
    assert short.maxrss_bytes is not None and short.maxrss_bytes >= ALLOCATED
    assert short.host_peak_bytes == short.maxrss_bytes
