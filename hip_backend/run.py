"""One run, on one device or split over ranks, or the user's own command: `start_run`
(`start_command`) and its `RunHandle`.

A single-device run is a run of one rank. `start_run` takes a `MeasureRequest` (or
what `prepare` / `prepare_parallel` made of one) and returns at once; the callback
gets the run's notices and progress from another thread, then exactly one `RunEnded`
whose outcome is a `MeasuredRun` (every rank's peak) or a `MeasurementFailure`. The
processes stay the engines' own: `python -m hip_backend.child` for one device
(hip_backend/launcher.py), `mlx.launch` and its ranks for a split
(hip_backend/ranks/launch.py). The user's command (`vramscope run`, the explorer's
`M`) is the same kind of run: `start_command` returns the same handle, whose one
`RunEnded` carries the command's peak (`hip_backend.external.record`), or the failure
it was (could not start, cancelled, not measured), and whose `cancel()` kills every
process of it. This module is the only writer of the history.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence

from core.errors import VramscopeError
from core.estimate.estimate import MemoryEstimate
from core.measurement.protocol import (
    MeasureEvent,
    MeasureFailed,
    MeasureNotice,
    MeasureProgress,
    MeasureResult,
)
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasurementFailure, UnmeasuredRun
from core.measurement.run import MeasuredRun, RunEnded, RunEvent, RunOutcome
from core.parallel.plan import ParallelEstimate
from hip_backend.external.record import (
    CommandFinish,
    SampleNotices,
    command_outcome,
    unmeasured_run,
)
from hip_backend.external.run import CommandRunner
from hip_backend.external.sampler import TreePeaks
from hip_backend.launcher import (
    KILL_GRACE_S,
    MeasurementHandle,
    PreparedMeasurement,
    prepare,
    start_child,
)
from hip_backend.ranks.launch import ParallelHandle, PreparedParallel, run_parallel

RunCallback = Callable[[RunEvent], None]
Prepared = PreparedMeasurement | PreparedParallel


class RunHandle:
    """A run in flight: `cancel()`, `wait(timeout)`, `done`, `outcome`, `pid`."""

    def __init__(self, on_event: RunCallback, prepared: Prepared | None, record: bool) -> None:
        self.prepared = prepared
        self._on_event = on_event
        self._record = record
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self._outcome: RunOutcome | None = None
        self._child: MeasurementHandle | None = None
        self._ranks: ParallelHandle | None = None
        self._command: CommandRunner | None = None

    @property
    def estimate(self) -> MemoryEstimate | ParallelEstimate | None:
        """What the peaks will be held against: the estimate at context P + G, or every
        rank's (None when the request did not resolve)."""
        return self.prepared.estimate if self.prepared is not None else None

    @property
    def pid(self) -> int | None:
        """The child's process id (a split's: mlx.launch's, its group's leader) while it runs."""
        if self._child is not None:
            return self._child.pid
        if self._command is not None:
            return self._command.pid
        return self._ranks.pgid if self._ranks is not None else None

    @property
    def done(self) -> bool:
        """True once `RunEnded` was delivered."""
        return self._finished.is_set()

    @property
    def outcome(self) -> RunOutcome | None:
        """The run or the failure, once done."""
        return self._outcome

    def wait(self, timeout: float | None = None) -> RunOutcome | None:
        """Block until done (or `timeout` seconds); the outcome, or None if still running."""
        # Done means recorded too: `_outcome` is set before the history line is written,
        # and a caller that exits on it would lose the line with the daemon thread.
        if not self._finished.wait(timeout):
            return None
        return self._outcome

    def cancel(self) -> None:
        """Stop the run: every process is killed and a CANCELLED failure ends it."""
        if self._child is not None:
            self._child.cancel()
        elif self._ranks is not None:
            self._ranks.cancel()
        elif self._command is not None:
            self._command.stop()

    def _deliver(self, event: RunEvent) -> None:
        try:
            self._on_event(event)
        except Exception as exc:  # a broken callback must not lose the terminal event
            print(f"vramscope: event callback failed: {exc}", file=sys.stderr)

    def _finish(self, outcome: RunOutcome, unmeasured: UnmeasuredRun | None = None) -> None:
        """End the run: its peaks recorded (or, for a command that ended before anything
        of it was read, `unmeasured`: the run with its peak "not measured")."""
        with self._lock:
            if self._finished.is_set():
                return
            self._outcome = outcome
        if self._record and isinstance(outcome, MeasuredRun):
            record_run(outcome)
        elif self._record and unmeasured is not None:
            record_run(unmeasured)
        self._deliver(RunEnded(outcome))
        self._finished.set()

    def _from_child(self, event: MeasureEvent) -> None:
        if isinstance(event, MeasureResult):
            self._finish(MeasuredRun((event.peak,)))
        elif isinstance(event, MeasureFailed):
            self._finish(event.failure)
        else:
            self._deliver(event)

    def _start_single(self, prepared: PreparedMeasurement, python: str | None) -> None:
        self._child = start_child(prepared, self._from_child, python=python)

    def _start_split(self, prepared: PreparedParallel, python: str | None) -> None:
        self._ranks = ParallelHandle()
        ranks = self._ranks

        def go() -> None:
            try:
                outcome = run_parallel(prepared, self._from_ranks, python=python, handle=ranks)
            except Exception as exc:  # a launcher bug ends the run, never silently
                outcome = MeasurementFailure(
                    FailureKind.INTERNAL, f"the split run failed: {type(exc).__name__}: {exc}"
                )
            self._finish(outcome)

        threading.Thread(target=go, daemon=True, name="vramscope-ranks").start()

    def _start_command(self, runner: CommandRunner, finish: CommandFinish) -> None:
        self._command = runner
        notices = SampleNotices()

        def sampled(peaks: TreePeaks) -> None:
            for line in notices.of(peaks):
                self._deliver(MeasureNotice(line))

        def go() -> None:
            unmeasured = None
            try:
                run = runner.follow(sampled)
                outcome = command_outcome(run, finish)
                if (
                    isinstance(outcome, MeasurementFailure)
                    and outcome.kind is FailureKind.NOT_MEASURED
                ):
                    unmeasured = unmeasured_run(run, finish, outcome)
            except Exception as exc:  # a bug ends the run, never silently
                runner.stop()
                outcome = MeasurementFailure(
                    FailureKind.INTERNAL, f"the run failed: {type(exc).__name__}: {exc}"
                )
            self._finish(outcome, unmeasured)

        threading.Thread(target=go, daemon=True, name="vramscope-command").start()

    def _from_ranks(self, event: MeasureEvent) -> None:
        if isinstance(event, MeasureProgress | MeasureNotice):  # rank 0's words
            self._deliver(event)


def start_run(
    request: MeasureRequest | Prepared,
    on_event: RunCallback,
    *,
    python: str | None = None,
    record_history: bool = True,
) -> RunHandle:
    """Start a run; returns immediately.

    Takes a request (one device), or one already prepared: `prepare(request)`, or
    `prepare_parallel(request, plan)` for a split (the CLI prepares first, so that a
    bad model name is a usage error). Bad input arrives as the `RunEnded` failure,
    never raised. A finished run is appended to the history unless `record_history`
    is False.
    """
    if isinstance(request, MeasureRequest):
        try:
            prepared: Prepared = prepare(request)
        except VramscopeError as exc:
            handle = RunHandle(on_event, None, record_history)
            handle._finish(MeasurementFailure(FailureKind.BAD_MODEL, str(exc)))
            return handle
    else:
        prepared = request
    handle = RunHandle(on_event, prepared, record_history)
    for warning in prepared.warnings:
        handle._deliver(MeasureNotice(warning))
    if isinstance(prepared, PreparedParallel):
        handle._start_split(prepared, python)
    else:
        handle._start_single(prepared, python)
    return handle


def start_command(
    argv: Sequence[str],
    finish: CommandFinish,
    on_event: RunCallback,
    *,
    interval_s: float = 0.25,
    quiet: bool = False,
    record_history: bool = True,
    cgroup: bool = True,
    keep_stderr: bool = False,
) -> RunHandle:
    """Start the user's command (`vramscope run -- ARGV`); returns immediately.

    The handle's one `RunEnded` carries `finish`'s peak of the run (recorded in the
    history unless `record_history` is False, whatever the command's exit status,
    which the peak holds), or the failure: the command could not start, `cancel()`
    stopped it, or nothing of it was read. Notices: other processes on the GPU, a
    command that stopped. `quiet`: no terminal for the command (the explorer);
    `cgroup` False follows the processes by the environment marker alone;
    `keep_stderr` tees the command's stderr and hands its start to `finish`
    (`CommandRun.stderr_text`: llama.cpp's own log).
    """
    handle = RunHandle(on_event, None, record_history)
    try:
        runner = CommandRunner(
            argv, interval_s, quiet=quiet, cgroup=cgroup, keep_stderr=keep_stderr
        )
        runner.start()
    except (VramscopeError, OSError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        if isinstance(exc, FileNotFoundError) and _cwd_gone():
            # Starting the holder in a deleted folder fails with ENOENT, which read as if
            # the program were missing.
            why = "the working directory no longer exists (cd to a folder that does)"
        handle._finish(MeasurementFailure(FailureKind.CANNOT_START, f"cannot run: {why}"))
        return handle
    handle._start_command(runner, finish)
    return handle


def _cwd_gone() -> bool:
    """True when the current working directory was deleted."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def measure(
    request: MeasureRequest | Prepared,
    on_event: RunCallback | None = None,
    *,
    python: str | None = None,
    record_history: bool = True,
) -> RunOutcome:
    """Run to the end and return the outcome (never raises for measurement problems;
    KeyboardInterrupt cancels the run and waits for its processes first)."""
    handle = start_run(
        request, on_event or (lambda _: None), python=python, record_history=record_history
    )
    try:
        while not handle.done:
            handle.wait(0.2)
    except KeyboardInterrupt:
        handle.cancel()
        handle.wait(KILL_GRACE_S)
        raise
    outcome = handle.outcome
    assert outcome is not None
    return outcome


def record_run(run: MeasuredRun | UnmeasuredRun) -> None:
    """Append every rank's peak to the history store, in rank order (or the run
    recorded as not measured): the one place a history line is written. A store that
    cannot be written is a warning on stderr, never an error."""
    from core.measurement.history import HistoryStore

    store = HistoryStore.default()
    for peak in run.ranks if isinstance(run, MeasuredRun) else (run,):
        try:
            kept = store.append(peak)
        except OSError as exc:
            print(f"vramscope: warning: could not record the result: {exc}", file=sys.stderr)
        else:
            if kept is not None:
                print(f"vramscope: warning: {kept}", file=sys.stderr)
