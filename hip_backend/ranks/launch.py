"""Measuring a tensor- or pipeline-parallel MLX load: N ranks under `mlx.launch`.

`prepare_parallel` resolves the model, computes every rank's estimate
(core/parallel/plan.py) and writes nothing; `run_parallel` writes the rank job to a
private temporary folder, finds N free consecutive loopback ports, and starts

    mlx.launch --backend ring -n N --starting-port P --python PY --cwd ROOT \\
        --env PYTHONPATH=ROOT -- -m hip_backend.ranks.rank JOB.json

in a new session, so that the launcher, its bash wrappers and every rank share
one process group. mlx.launch writes the ring hostfile itself (one
`127.0.0.1:P+r` per rank, in `MLX_HOSTFILE`) and sets `MLX_RANK`. Given MLX's
own hostfile (checked first by hip_backend/ranks/hostfile.py), `--hostfile FILE`
replaces `-n N` and mlx.launch places rank r on host r. `TMPDIR`
points at our folder so its pid and host files go away with it. Each rank
writes its protocol lines to `rank-<r>.jsonl`; rank 0's progress is passed on
while the run goes. Whatever happens (success, a failed rank, a timeout, a
cancel, an exception here), the whole process group is killed before
`run_parallel` returns, so no rank is left running. hip_backend/run.py runs it
as one run (`start_run`).
"""

from __future__ import annotations

import collections
import contextlib
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from core.backend import Backend
from core.catalog.resolve import resolve_entry
from core.catalog.split_source import resolve_parallel_model
from core.environment import read_env, resolve_settings
from core.estimate.available import AvailableMemory
from core.estimate.estimate import Workload
from core.measurement.comparison import expected_backend
from core.measurement.engine import Engine
from core.measurement.protocol import (
    MeasureEvent,
    MeasureFailed,
    MeasureProgress,
    MeasureResult,
    decode_event,
)
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from core.measurement.run import MeasuredRun, RunOutcome
from core.parallel.plan import ParallelEstimate, ParallelPlan, estimate_parallel
from hip_backend.launcher import resolve_budget
from hip_backend.parent_watch import PARENT_ENV, parent_token
from hip_backend.ranks.hostfile import RingHostfile
from hip_backend.ranks.job import RANK_FILE, SINGLE_FILE, RankJob
from hip_backend.spawn import CHILD_MALLOC_ENV, PROJECT_ROOT, child_env, kill_group, spawn

EventCallback = Callable[[MeasureEvent], None]
POLL_S = 0.1
STDERR_TAIL_LINES = 40
PORT_RANGE = (20000, 60000)


@dataclass(frozen=True)
class PreparedParallel:
    """A parallel measurement resolved in the parent: the rank job and the estimates."""

    request: MeasureRequest
    plan: ParallelPlan
    job: RankJob
    estimate: ParallelEstimate
    backend: Backend
    warnings: tuple[str, ...]
    hostfile: RingHostfile | None = None
    """MLX's hostfile the ranks are placed by; None runs them all on the loopback."""


def prepare_parallel(
    request: MeasureRequest,
    plan: ParallelPlan,
    env: dict[str, str | None] | None = None,
    hostfile: RingHostfile | None = None,
) -> PreparedParallel:
    """Resolve model, budget and per-rank estimates; raises VramscopeError on bad input."""
    env = read_env() if env is None else env
    dirs = [Path(d) for d in request.models_dirs]
    entry = resolve_entry(request.model, dirs)
    model, tensors = resolve_parallel_model(request.model, dirs)
    backend = expected_backend(Engine.MLX, request.device)  # the ranks run MLX
    budget = resolve_budget(request.inflight, env)
    resolved = resolve_settings(
        backend, env, available=AvailableMemory(0, "not used for a measurement")
    )
    settings = replace(resolved.settings, inflight_mib=budget.mib)
    pe = estimate_parallel(
        model, tensors, plan, Workload(max_tokens=request.context_tokens), settings
    )
    real = entry.path is not None and entry.weights_on_disk and not request.synthetic
    job = RankJob(
        display=request.model,
        kind=plan.kind,
        ranks=plan.ranks,
        out_dir="",
        folder=str(entry.path.resolve()) if entry.path is not None else None,
        profile_id=entry.profile_id if entry.path is None else None,
        synthetic=not real,
        prompt_tokens=request.prompt_tokens,
        gen_tokens=request.gen_tokens,
        warmup_tokens=request.warmup_tokens,
    )
    notes = tuple(w for w in resolved.warnings) + model.warnings
    if not real:
        notes += ("synthetic weights: every rank loads random arrays of the real shapes",)
    return PreparedParallel(request, plan, job, pe, backend, notes, hostfile)


def free_port_block(count: int, attempts: int = 50) -> int:
    """A base port P with P .. P+count-1 all free on 127.0.0.1 right now."""
    rng = random.Random()
    for _ in range(attempts):
        base = rng.randrange(PORT_RANGE[0], PORT_RANGE[1] - count)
        socks: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise OSError(f"no block of {count} free loopback ports found")


_LAUNCH = (
    "import select, sys; import mlx._distributed_utils.launch as launch; "
    "launch.select = (lambda r, w, x, t: (select.select(r, [], x, t)[0], [], [])) "
    "if launch.__dict__.get('select') is select.select else launch.__dict__.get('select'); "
    "sys.exit(launch.main())"
)
"""mlx.launch with its I/O threads waiting, not spinning: each waits in select() on its
rank's stdin pipe, which is always writable, and its main loop on our stdin; vramscope
sends the ranks no input, so the write side is left out (and stdin is a pipe nobody
writes). Both spun for the whole run: 6-9 s of processor time in a 2-rank run. Only
`select.select` itself, as mlx 0.32 imports it, is replaced: a launcher that calls it
otherwise runs as it is."""


def mlx_launch_command(
    python: str, ranks: int, port: int, job_file: Path, hostfile: RingHostfile | None = None
) -> list[str]:
    """The `mlx.launch` command line (MLX's own launcher, run by this interpreter): N
    ranks on the loopback, or one rank per host of the hostfile."""
    placement = ["--hostfile", str(hostfile.path)] if hostfile else ["-n", str(ranks)]
    return [
        python,
        "-c",
        _LAUNCH,
        "--backend",
        "ring",
        *placement,
        "--starting-port",
        str(port),
        "--python",
        python,
        "--cwd",
        str(PROJECT_ROOT),
        "--env",
        f"PYTHONPATH={PROJECT_ROOT}",
        f"--env={PARENT_ENV}={parent_token()}",  # each rank dies with this process
        *[f"--env={k}={v}" for k, v in CHILD_MALLOC_ENV.items()],
        "--",
        "-m",
        "hip_backend.ranks.rank",
        str(job_file),
    ]


def launch_line(plan: ParallelPlan, model: str) -> str:
    """What a user would type to run the same plan by hand (for display)."""
    return (
        f"mlx.launch --backend ring -n {plan.ranks} -- -m hip_backend.ranks.rank "
        f"<job for {model} {plan.flag}>"
    )


class ParallelHandle:
    """A running parallel measurement: `cancel()`, `wait()`, `outcome`."""

    def __init__(self) -> None:
        self._cancel = threading.Event()
        self.pgid: int | None = None

    def cancel(self) -> None:
        """Stop every rank; the run ends as CANCELLED."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        """True once cancel() was called."""
        return self._cancel.is_set()


def _read_events(path: Path) -> list[MeasureEvent]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [e for e in (decode_event(line) for line in text.splitlines()) if e is not None]


def _drain(stream: object, tail: collections.deque[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        tail.append(str(line).rstrip("\n"))


def run_parallel(
    prepared: PreparedParallel,
    on_event: EventCallback | None = None,
    *,
    python: str | None = None,
    handle: ParallelHandle | None = None,
) -> RunOutcome:
    """Run every rank to the end; the per-rank peaks or one typed failure naming a rank."""
    on_event = on_event or (lambda _: None)
    handle = handle or ParallelHandle()
    python = python or sys.executable
    timeout = prepared.request.timeout_s
    tmp = Path(tempfile.mkdtemp(prefix="vramscope-ranks-"))
    process: subprocess.Popen[str] | None = None
    try:
        job = replace(prepared.job, out_dir=str(tmp))
        job_file = tmp / "job.json"
        job_file.write_text(job.to_json(), encoding="utf-8")
        hostfile = prepared.hostfile
        port = free_port_block(hostfile.ports if hostfile else prepared.plan.ranks)
        # mlx.launch hands the ranks PYTHONPATH itself (--env); its pid and host files
        # go to our folder.
        env = child_env(overrides={"TMPDIR": str(tmp)}, import_path=False)
        tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        start = time.monotonic()
        process = spawn(
            mlx_launch_command(python, prepared.plan.ranks, port, job_file, hostfile),
            env,
            stdin=subprocess.PIPE,  # never written: mlx.launch's select() on it waits
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        handle.pgid = process.pid
        reader = threading.Thread(target=_drain, args=(process.stdout, tail), daemon=True)
        reader.start()
        rank0 = tmp / RANK_FILE.format(rank=0)
        seen = 0
        stop: FailureKind | None = None
        while process.poll() is None:
            if handle.cancelled:
                stop = FailureKind.CANCELLED
            elif timeout is not None and time.monotonic() - start > timeout:
                stop = FailureKind.TIMEOUT
            elif _any_rank_failed(tmp, prepared.plan.ranks):
                break  # mlx.launch stops the others itself; the group kill makes sure
            if stop is not None:
                break
            events = _read_events(rank0)
            for event in events[seen:]:
                if isinstance(event, MeasureProgress):
                    on_event(event)
            seen = len(events)
            time.sleep(POLL_S)
        wall = time.monotonic() - start
        ended = process.poll()  # before our kill: how mlx.launch itself ended, if it did
        kill_group(process.pid)
        process.wait()
        reader.join(2.0)
        if stop is FailureKind.CANCELLED:
            return MeasurementFailure(stop, "the parallel measurement was cancelled")
        if stop is FailureKind.TIMEOUT:
            return MeasurementFailure(
                stop, f"the parallel measurement ran past its {timeout:g} s limit; ranks killed"
            )
        return _collect(prepared, tmp, wall, tail, ended)
    except OSError as exc:
        return MeasurementFailure(FailureKind.INTERNAL, f"cannot launch the ranks: {exc}")
    finally:
        if process is not None:
            kill_group(process.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5.0)
            if process.stdin is not None:
                process.stdin.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _any_rank_failed(tmp: Path, ranks: int) -> bool:
    for r in range(ranks):
        events = _read_events(tmp / RANK_FILE.format(rank=r))
        if events and isinstance(events[-1], MeasureFailed):
            return True
    return False


def _collect(
    prepared: PreparedParallel,
    tmp: Path,
    wall: float,
    tail: collections.deque[str],
    launcher_status: int | None = None,
) -> RunOutcome:
    peaks: list[MeasuredPeak] = []
    missing: list[int] = []
    for r, rank_est in enumerate(prepared.estimate.ranks):
        events = _read_events(tmp / RANK_FILE.format(rank=r))
        last = events[-1] if events else None
        if isinstance(last, MeasureFailed):
            return last.failure
        if not isinstance(last, MeasureResult):
            missing.append(r)
            continue
        label = (
            f"{prepared.request.model} ({prepared.plan.kind.value} {prepared.plan.ranks}, rank {r})"
        )
        peaks.append(
            replace(
                last.peak,
                model=label,
                estimate_bytes=rank_est.peak_bytes,
                family=prepared.estimate.family,
            )
        )
    if missing:
        if launcher_status is not None and launcher_status < 0:
            return _launcher_stopped(-launcher_status, prepared.plan.ranks, len(missing))
        return _missing_rank_failure(prepared.plan.ranks, missing, tail)
    return MeasuredRun(tuple(peaks), prepared.plan, wall)


def _signal_name(sig: int) -> str:
    return signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)


def _launcher_stopped(sig: int, ranks: int, missing: int) -> MeasurementFailure:
    """mlx.launch itself was ended by a signal from outside (`kill`, a closed terminal):
    the run was stopped; its ranks did not fail on their own."""
    return MeasurementFailure(
        FailureKind.KILLED,
        f"the run was stopped: mlx.launch was ended by {_signal_name(sig)} before "
        f"{missing} of its {ranks} ranks had a result",
    )


_EXITED = re.compile(r"Node with rank (\d+) exited with code (-?\d+)")


def _missing_rank_failure(
    ranks: int, missing: list[int], tail: collections.deque[str]
) -> MeasurementFailure:
    """Name the rank that died first: mlx.launch reports its exit code (the others it
    stops are reported as killed), else the first rank without a result."""
    for line in tail:
        m = _EXITED.search(line)
        if m:
            rank, code = int(m.group(1)), int(m.group(2))
            if code < 0:
                sig = -code
                how = f"was killed by {_signal_name(sig)}"
                if sig == signal.SIGKILL:
                    how += " (the kernel's out-of-memory killer sends this when memory runs out)"
            else:
                how = f"exited with status {code}"
            return MeasurementFailure(FailureKind.KILLED, f"rank {rank} of {ranks} {how}")
    lines = [line for line in tail if line.strip()]
    detail = f": {lines[-1].strip()[:300]}" if lines else ""
    return MeasurementFailure(
        FailureKind.KILLED, f"rank {missing[0]} of {ranks} ended without a result{detail}"
    )


def run_single(prepared: PreparedParallel, *, python: str | None = None) -> RunOutcome:
    """The same load and workload in one process, no group: the single-device peak."""
    python = python or sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="vramscope-single-"))
    timeout = prepared.request.timeout_s
    try:
        job_file = tmp / "job.json"
        job_file.write_text(replace(prepared.job, out_dir=str(tmp)).to_json(), encoding="utf-8")
        process = spawn(
            [python, "-m", "hip_backend.ranks.rank", "--single", str(job_file)], child_env()
        )
        try:
            _, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            process.wait()
            return MeasurementFailure(FailureKind.TIMEOUT, f"the single run ran past {timeout:g} s")
        events = _read_events(tmp / SINGLE_FILE)
        last = events[-1] if events else None
        if isinstance(last, MeasureResult):
            peak = replace(last.peak, estimate_bytes=prepared.estimate.single.total_bytes)
            return MeasuredRun((peak,))
        if isinstance(last, MeasureFailed):
            return last.failure
        lines = [line for line in (err or "").splitlines() if line.strip()]
        return MeasurementFailure(
            FailureKind.INTERNAL,
            f"the single run exited with {process.returncode}"
            + (f": {lines[-1][:300]}" if lines else ""),
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
