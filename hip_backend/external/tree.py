"""Every process a `vramscope run` command starts, found and stopped: its tree.

A command may leave its parent's tree (`setsid`, a double fork: `(cmd &)`), so its
processes are not found by `PPid` alone. Two ways follow them all:

- a cgroup v2 of the run's own, where this machine lets vramscope make one (below the
  cgroup vramscope is in): the holder moves itself into it before the command starts,
  and every process started after is in it whatever it does with its session or
  parent. `cgroup.procs` lists them, `cgroup.kill` ends them, and where the memory
  controller is on, `memory.peak` is the group's host peak;
- the run's token in the environment (`VRAMSCOPE_RUN_TOKEN`), which every descendant
  inherits: a process whose `/proc/PID/environ` holds it is the command's. Always set,
  so it also covers a machine where the cgroup cannot be made or joined.

Both are read together with the holder's descendants by `PPid` (a process that clears
its environment before a double fork is the one case neither of the others sees).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

from core.probes.proc_status import read_environ, read_state
from core.regular_file import read_regular
from hip_backend.external import CGROUP_ENV, TOKEN_ENV

GONE_S = 5.0
"""How long `kill` keeps killing until no process of the tree is left."""
CGROUP_PREFIX = "vramscope-run-"
_READ_CAP = 1 << 20
_PEAK_CAP = 64
_TOKEN_PREFIX = TOKEN_ENV.encode() + b"="


def cgroup2_dir(proc: Path = Path("/proc")) -> Path | None:
    """The cgroup v2 folder this process is in, or None (no cgroup2 mounted)."""
    try:
        own = (proc / "self" / "cgroup").read_text()
        mounts = (proc / "self" / "mountinfo").read_text()
    except OSError:
        return None
    path = next((line[3:] for line in own.splitlines() if line.startswith("0::")), None)
    if path is None:
        return None
    for line in mounts.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if sep and right.split()[:1] == ["cgroup2"] and len(fields) >= 5:
            root, point = fields[3], fields[4]
            inside = os.path.relpath(path, root) if path.startswith(root) else None
            if inside is None or inside.startswith(".."):
                continue  # this mount does not show our cgroup
            return Path(point) / ("" if inside == "." else inside)
    return None


def make_cgroup() -> Path | None:
    """A new empty cgroup below this process's, or None where one cannot be made."""
    parent = cgroup2_dir()
    if parent is None:
        return None
    group = parent / f"{CGROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
    try:
        group.mkdir()
    except OSError:
        return None
    if not (group / "cgroup.procs").is_file():
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    return group


def join_cgroup() -> bool:
    """Move this process into the cgroup `VRAMSCOPE_RUN_CGROUP` names (the holder does,
    before it starts the command); False when there is none or the move is refused."""
    path = os.environ.get(CGROUP_ENV)
    if not path:
        return False
    try:
        with open(Path(path) / "cgroup.procs", "w") as procs:
            procs.write(str(os.getpid()))
    except OSError:
        return False
    return True


def _cgroup_pids(group: Path) -> list[int]:
    """The processes in the cgroup and in the ones below it (a `vramscope run` inside
    the command makes its own there)."""
    out: list[int] = []
    for folder, _, _ in os.walk(group):
        try:
            with open(Path(folder) / "cgroup.procs", "rb") as f:
                text = f.read(_READ_CAP).decode("ascii", "replace")
        except OSError:
            continue
        out.extend(int(p) for p in text.split() if p.isdigit())
    return out


def _carries(pid: int, token: bytes) -> bool | None:
    """Whether the process carries the run's token; None when its environment cannot be
    read or is empty (a kernel thread, another user's process, a process in the middle
    of its exec), which says nothing for good."""
    data = read_environ(pid)
    if not data:
        return None
    entry = next((e for e in data.split(b"\0") if e.startswith(_TOKEN_PREFIX)), None)
    return entry is not None and token in entry[len(_TOKEN_PREFIX) :].split(b":")


def _live(pid: int) -> bool:
    state = read_state(pid)
    return state is not None and state not in ("Z", "X")


class RunTree:
    """One run's processes: the token every one inherits, and its cgroup where made."""

    def __init__(self, token: str, cgroup: Path | None, *, seen: bool = False) -> None:
        self.token = token
        self.cgroup = cgroup
        self.cgroup_seen = seen
        """True once a process was seen in the cgroup (the holder joined it)."""
        self._not_ours: set[int] = set()
        """Processes seen without the token: a process has it from its fork (it is a copy
        of its parent's), so one seen without it never gets it; forgotten once gone."""

    @classmethod
    def new(cls, *, cgroup: bool = True) -> RunTree:
        """A new run's tree: a fresh token, and a cgroup where one can be made."""
        return cls(uuid.uuid4().hex, make_cgroup() if cgroup else None)

    @classmethod
    def inherited(cls) -> RunTree | None:
        """The tree the holder was handed (None without a token)."""
        token = os.environ.get(TOKEN_ENV, "").rsplit(":", 1)[-1]  # after any outer run's
        path = os.environ.get(CGROUP_ENV)
        if not token:
            return None
        return cls(token, Path(path) if path else None, seen=True)

    def env(self) -> dict[str, str]:
        """What the holder is handed: the token (after the tokens of the runs this one
        is inside, so that theirs still follow it), and the cgroup to join."""
        outer = os.environ.get(TOKEN_ENV)
        out = {TOKEN_ENV: f"{outer}:{self.token}" if outer else self.token}
        if self.cgroup is not None:
            out[CGROUP_ENV] = str(self.cgroup)
        return out

    @property
    def followed_by(self) -> str:
        """How the processes were found, in words (a run's record says it)."""
        if self.cgroup is not None and self.cgroup_seen:
            return f"cgroup v2 {self.cgroup}"
        return f"the environment marker {TOKEN_ENV}"

    def members(self, pids: list[int] | None = None) -> set[int]:
        """The processes of the run: in its cgroup, or carrying its token (`pids`: the
        processes to look at for the token, default every one)."""
        found: set[int] = set()
        if self.cgroup is not None:
            listed = _cgroup_pids(self.cgroup)
            self.cgroup_seen = self.cgroup_seen or bool(listed)
            found.update(listed)
        token = self.token.encode()
        if pids is None:
            try:
                pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
            except OSError:
                pids = []
        mine = os.getpid()
        self._not_ours &= set(pids)
        for pid in pids:
            if pid in found or pid in self._not_ours or pid == mine:
                continue
            carries = _carries(pid, token)
            if carries:
                found.add(pid)
            elif carries is False:
                self._not_ours.add(pid)
        found.discard(mine)
        return found

    def memory_peak(self) -> int | None:
        """The cgroup's `memory.peak` in bytes, where the memory controller gives one
        (a regular file of at most 20 ASCII digits: the kernel's u64; anything else,
        or a file that is not regular, is None, never a hang or a traceback)."""
        if self.cgroup is None or not self.cgroup_seen:
            return None
        try:
            raw = read_regular(self.cgroup / "memory.peak", _PEAK_CAP)
        except OSError:
            return None
        text = raw.strip()
        if len(raw) > _PEAK_CAP or not text.isdigit() or not text.isascii() or len(text) > 20:
            return None
        value = int(text)
        return value if value < 1 << 64 else None

    def kill(self, also: tuple[int, ...] = ()) -> None:
        """SIGKILL every process of the tree (and `also`), again until none is left alive
        or GONE_S has passed: a process can fork while the others are being killed."""
        deadline = time.monotonic() + GONE_S
        while True:
            if self.cgroup is not None:
                with contextlib.suppress(OSError):
                    (self.cgroup / "cgroup.kill").write_text("1")
            alive = [p for p in self.members() | set(also) if _live(p)]
            if not alive or time.monotonic() > deadline:
                return
            for pid in alive:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def close(self) -> None:
        """Remove the cgroup (once its processes are gone)."""
        if self.cgroup is None:
            return
        deadline = time.monotonic() + GONE_S
        while True:
            try:
                self.cgroup.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:  # a killed process not yet gone from the group
                if time.monotonic() > deadline:
                    return
                time.sleep(0.01)


def kill_own_tree() -> None:
    """From inside the holder: kill the command's processes (vramscope is gone). The
    holder leaves the cgroup first, so that it can remove it once it is empty."""
    tree = RunTree.inherited()
    if tree is None:
        return
    if tree.cgroup is not None:
        with contextlib.suppress(OSError):
            (tree.cgroup.parent / "cgroup.procs").write_text(str(os.getpid()))
    tree.kill()
    tree.close()
