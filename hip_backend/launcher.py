"""Starting a measurement in a child process and following it (no torch in here).

`prepare(request)` resolves the model and the in-flight budget and computes the
estimate the peak will be compared with; `start_child(prepared, on_event)` starts
`python -m hip_backend.child` and returns a `MeasurementHandle` at once. A reader
thread parses the child's JSON lines and calls `on_event` with
`core.measurement` events, from that thread (a UI hands them to its own loop).
Exactly one terminal event (`MeasureResult` or `MeasureFailed`) is delivered, also
when the child is cancelled, killed, times out or exits without a word. The run
API over it (one outcome for one device and for a split) is hip_backend/run.py.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from core.answer.held_against import held_against_answer
from core.backend import Backend
from core.catalog.resolve import resolve_entry
from core.environment import read_env, resolve_settings
from core.errors import UsageError
from core.estimate.estimate import EstimateSettings, MemoryEstimate
from core.estimate.inflight import (
    MAX_ACCEPTED_INFLIGHT_MB,
    ROCM_MAX_INFLIGHT_ENV,
    InflightBudget,
    InflightOrigin,
    resolve_inflight_budget,
)
from core.estimate.snapshot import ModelSnapshot
from core.measurement.comparison import expected_backend, held_against
from core.measurement.engine import Engine
from core.measurement.protocol import (
    MeasureEvent,
    MeasureFailed,
    MeasureResult,
    decode_event,
)
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from core.model.config import ModelConfig
from hip_backend.engines import runtime
from hip_backend.host import CAPPED_ALLOCATION_TEXTS
from hip_backend.job import ChildJob
from hip_backend.spawn import (
    CHILD_MALLOC_ENV,
    CHILD_THREAD_ENV,
    child_env,
    kill_group,
    signal_group,
    spawn,
    thread_failure,
)

EventCallback = Callable[[MeasureEvent], None]
Outcome = MeasuredPeak | MeasurementFailure

STDERR_TAIL_LINES = 40
KILL_GRACE_S = 5.0


@dataclass(frozen=True)
class PreparedMeasurement:
    """A request resolved in the parent: the child's job, the budget and the estimate."""

    request: MeasureRequest
    job: ChildJob
    budget: InflightBudget
    estimate: MemoryEstimate
    snapshot: ModelSnapshot
    warnings: tuple[str, ...]
    settings: EstimateSettings | None = None
    """The estimate's settings (its backend is the one the comparison assumes)."""

    @property
    def backend(self) -> Backend:
        """The backend whose formula the estimate uses."""
        return self.settings.backend if self.settings is not None else Backend.ROCM

    def estimate_for(self, device_kind: Backend, *, rocm_queue: bool = True) -> MemoryEstimate:
        """The estimate a peak measured on `device_kind` is compared with.

        A torch run that emulated MLX-ROCm's in-flight queue (`rocm_queue`: ROCm, the
        CPU, or `--emulate rocm`) is compared with the ROCm formula; one that did not
        (CUDA by default) with its own device's formula, which has no in-flight term.
        An mlx run is compared with the formula of the backend it actually ran on:
        ROCm has the in-flight term, the CPU, Metal and CUDA have none.
        """
        backend = held_against(self.request.engine, device_kind, emulated_queue=rocm_queue)
        if self.settings is None or backend is self.settings.backend:
            return self.estimate
        return held_against_answer(
            self.snapshot,
            self.settings,
            backend,
            context_tokens=self.request.context_tokens,
            kv_int8=self.request.kv_int8,
        ).estimate


def resolve_budget(inflight: str | int | None, env: dict[str, str | None]) -> InflightBudget:
    """The in-flight budget: MiB as given, raw text through the estimate's parser, or the
    environment variable (unset meaning 1024)."""
    if inflight is None:
        return resolve_inflight_budget(env.get(ROCM_MAX_INFLIGHT_ENV))
    if isinstance(inflight, str):
        return resolve_inflight_budget(inflight, InflightOrigin.FLAG)
    if isinstance(inflight, bool) or not 0 <= inflight <= MAX_ACCEPTED_INFLIGHT_MB:
        raise UsageError("--inflight-mb", f"{inflight!r} is not a MiB count the backend accepts")
    return InflightBudget(inflight, InflightOrigin.REQUEST, str(inflight))


def comparison_settings(
    request: MeasureRequest, budget: InflightBudget, env: dict[str, str | None]
) -> tuple[EstimateSettings, tuple[str, ...]]:
    """Estimate settings for the comparison, with this run's budget.

    The torch engine applies ROCm's in-flight bound on every device, so the estimate
    it is held against is the ROCm formula (in-flight term included) everywhere. An
    mlx run uses the formula of its expected backend
    (`core.measurement.comparison.expected_backend`). Available memory plays no part
    in a comparison and is not probed.
    """
    from core.estimate.available import AvailableMemory

    resolved = resolve_settings(
        expected_backend(request.engine, request.device),
        env,
        available=AvailableMemory(0, "not used for a measurement"),
    )
    settings = replace(
        resolved.settings,
        inflight_mib=budget.mib,
        headroom_factor=(
            resolved.settings.headroom_factor
            if request.headroom_factor is None
            else request.headroom_factor
        ),
        activation_mult=(
            resolved.settings.activation_mult
            if request.activation_mult is None
            else request.activation_mult
        ),
    )
    notes = tuple(w for w in resolved.warnings if ROCM_MAX_INFLIGHT_ENV not in w)
    return settings, notes


def prepare(
    request: MeasureRequest, env: dict[str, str | None] | None = None
) -> PreparedMeasurement:
    """Resolve the model and budget and compute the estimate; raises VramscopeError."""
    from core.catalog.resolve import entry_snapshot

    env = read_env() if env is None else env
    entry = resolve_entry(request.model, [Path(d) for d in request.models_dirs])
    snapshot = entry_snapshot(entry, request.model)
    budget = resolve_budget(request.inflight, env)
    settings, notes = comparison_settings(request, budget, env)
    est = held_against_answer(
        snapshot,
        settings,
        settings.backend,
        context_tokens=request.context_tokens,
        kv_int8=request.kv_int8,
    ).estimate
    warning = budget.warning()
    job = ChildJob(
        request,
        folder=str(entry.path.resolve()) if entry.path is not None else None,
        profile_id=entry.profile_id if entry.path is None else None,
        inflight_mib=budget.mib,
    )
    warnings = (*notes, *snapshot.warnings, *est.warnings, *([warning] if warning else []))
    return PreparedMeasurement(request, job, budget, est, snapshot, warnings, settings)


class MeasurementHandle:
    """A running measurement: `cancel()`, `wait(timeout)`, `done`, `outcome`."""

    def __init__(
        self,
        on_event: EventCallback,
        prepared: PreparedMeasurement | None = None,
    ) -> None:
        self.prepared = prepared
        self._on_event = on_event
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self._outcome: Outcome | None = None
        self._stop_reason: FailureKind | None = None
        self._process: subprocess.Popen[str] | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._timer: threading.Timer | None = None
        self._stderr_reader: threading.Thread | None = None

    @property
    def estimate(self) -> MemoryEstimate | None:
        """The estimate at context P + G the peak will be compared with."""
        return self.prepared.estimate if self.prepared else None

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._process.pid if self._process is not None else None

    @property
    def done(self) -> bool:
        """True once the terminal event was delivered."""
        return self._finished.is_set()

    @property
    def outcome(self) -> Outcome | None:
        """The peak or the failure, once done."""
        return self._outcome

    def wait(self, timeout: float | None = None) -> Outcome | None:
        """Block until done (or `timeout` seconds); the outcome, or None if still running."""
        self._finished.wait(timeout)
        return self._outcome

    def cancel(self) -> None:
        """Stop the run: the child is killed and a CANCELLED failure is delivered."""
        self._stop(FailureKind.CANCELLED)

    def _stop(self, reason: FailureKind) -> None:
        with self._lock:
            if self._finished.is_set() or self._stop_reason is not None:
                return
            self._stop_reason = reason
            process = self._process
        if process is not None and process.poll() is None:
            # The child leads its own process group: take any helpers down with it.
            signal_group(process.pid)

    def _deliver(self, event: MeasureEvent) -> None:
        try:
            self._on_event(event)
        except Exception as exc:  # a broken callback must not lose the terminal event
            print(f"vramscope: event callback failed: {exc}", file=sys.stderr)

    def _finish(self, outcome: Outcome) -> None:
        with self._lock:
            if self._finished.is_set():
                return
            self._outcome = outcome
        if self._timer is not None:
            self._timer.cancel()
        event: MeasureEvent
        event = (
            MeasureResult(outcome) if isinstance(outcome, MeasuredPeak) else MeasureFailed(outcome)
        )
        self._deliver(event)
        self._finished.set()

    def _start(self, job: ChildJob, python: str, timeout: float | None) -> None:
        overrides = {}
        if runtime(job.request.engine).budget_from_env and job.request.inflight is not None:
            # An explicit budget (--inflight-mb) is what MLX's ROCm backend must run with;
            # the estimate it is compared with uses the same value.
            overrides[ROCM_MAX_INFLIGHT_ENV] = str(job.inflight_mib)
        # MLX_* variables reach the child unchanged; it imports core and hip_backend from
        # this checkout, installed or not.
        env = child_env(defaults=CHILD_MALLOC_ENV | CHILD_THREAD_ENV, overrides=overrides)
        try:
            self._process = spawn(
                [python, "-m", "hip_backend.child"],
                env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        except OSError as exc:
            self._finish(MeasurementFailure(FailureKind.INTERNAL, f"cannot start {python}: {exc}"))
            return
        try:
            if timeout is not None:
                self._timer = threading.Timer(timeout, self._stop, (FailureKind.TIMEOUT,))
                self._timer.daemon = True
                self._timer.start()
            self._stderr_reader = threading.Thread(
                target=self._read_stderr, daemon=True, name="vramscope-child-err"
            )
            self._stderr_reader.start()
            threading.Thread(
                target=self._read_stdout, args=(job,), daemon=True, name="vramscope-child-out"
            ).start()
        except RuntimeError as exc:  # "can't start new thread": no memory for its stack
            kill_group(self._process.pid)
            self._process.wait()
            self._finish(MeasurementFailure(FailureKind.OUT_OF_MEMORY, thread_failure(exc)))

    def _read_stderr(self) -> None:
        assert self._process is not None
        assert self._process.stderr is not None
        for line in self._process.stderr:
            self._stderr_tail.append(line.rstrip("\n"))

    def _read_stdout(self, job: ChildJob) -> None:
        process = self._process
        assert process is not None
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            process.stdin.write(job.to_json())
            process.stdin.close()
        except OSError:
            pass  # the child died before reading; its exit status tells why
        terminal: Outcome | None = None
        for line in process.stdout:
            event = decode_event(line)
            if event is None:
                self._stderr_tail.append(line.rstrip("\n"))
            elif isinstance(event, MeasureResult):
                terminal = self._with_estimate(event.peak)
            elif isinstance(event, MeasureFailed):
                terminal = event.failure
            elif self._stop_reason is None:
                self._deliver(event)
        returncode = process.wait()
        if self._stderr_reader is not None:  # its last lines may explain the exit
            self._stderr_reader.join(KILL_GRACE_S)
        self._finish(self._final_outcome(terminal, returncode))

    def _with_estimate(self, peak: MeasuredPeak) -> MeasuredPeak:
        if self.prepared is None:
            return peak
        estimate = self.prepared.estimate_for(peak.device_kind, rocm_queue=peak.emulated_queue)
        return replace(peak, estimate_bytes=estimate.total_bytes)

    def _final_outcome(self, terminal: Outcome | None, returncode: int) -> Outcome:
        if isinstance(terminal, MeasuredPeak):
            return terminal  # it finished before a cancel or timeout could land
        if self._stop_reason is FailureKind.CANCELLED:
            return MeasurementFailure(FailureKind.CANCELLED, "the measurement was cancelled")
        if self._stop_reason is FailureKind.TIMEOUT:
            limit = self.prepared.request.timeout_s if self.prepared else None
            return MeasurementFailure(
                FailureKind.TIMEOUT,
                f"the measurement ran past its {limit:g} s limit and was killed",
            )
        if terminal is not None:
            return terminal
        if returncode < 0:
            sig = -returncode
            name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
            cap = self.prepared.request.host_memory_cap_bytes if self.prepared else None
            if cap is not None and sig in _CAP_SIGNALS:
                # Under RLIMIT_AS, native code that cannot map memory crashes instead of
                # raising: that is the cap doing its job, not a bug.
                return MeasurementFailure(
                    FailureKind.OUT_OF_MEMORY,
                    f"an allocation failed under --memory-cap {cap} bytes "
                    f"(native code stopped with {name})",
                )
            hint = (
                " (the kernel's out-of-memory killer sends this when memory runs out)"
                if sig == signal.SIGKILL
                else ""
            )
            return MeasurementFailure(
                FailureKind.KILLED, f"the measuring process was killed by {name}{hint}"
            )
        last = next((line for line in reversed(self._stderr_tail) if line.strip()), "")
        detail = f": {last.strip()}" if last else ""
        cap = self.prepared.request.host_memory_cap_bytes if self.prepared else None
        if cap is not None and any(t in last.lower() for t in CAPPED_ALLOCATION_TEXTS):
            # Native code that exits (libgomp with no room for a thread's stack) rather
            # than raising: the cap refusing memory, as in the child's own check.
            return MeasurementFailure(
                FailureKind.OUT_OF_MEMORY,
                f"an allocation failed under --memory-cap {cap} bytes{detail}",
            )
        return MeasurementFailure(
            FailureKind.INTERNAL,
            f"the measuring process exited with status {returncode} without a result{detail}",
        )


# Signals native code dies with when an allocation fails under an address-space cap.
_CAP_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT})


def start_child(
    prepared: PreparedMeasurement, on_event: EventCallback, *, python: str | None = None
) -> MeasurementHandle:
    """Start `python -m hip_backend.child` on a prepared request; returns immediately.
    The child's events reach `on_event` from a reader thread, the terminal one last
    (`hip_backend.run.RunHandle` makes them the run's)."""
    handle = MeasurementHandle(on_event, prepared)
    handle._start(prepared.job, python or sys.executable, prepared.request.timeout_s)
    return handle


def config_refusal(engine: Engine, config: ModelConfig) -> MeasurementFailure | None:
    """The engine's own refusal of a model, known from its config alone (no child is
    started, no runtime imported): the torch engine's families and quantizations. None
    when the engine would try; anything else is the run's to report, in its own words."""
    if engine is not Engine.TORCH:
        return None
    from hip_backend.errors import UnsupportedModelError
    from hip_backend.model.arch import arch_from_config

    try:
        arch_from_config(config)
    except UnsupportedModelError as exc:
        return MeasurementFailure(FailureKind.UNSUPPORTED_MODEL, str(exc))
    except Exception:  # the launcher reports it when the run is started
        return None
    return None
