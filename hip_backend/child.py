"""The measuring process: `python -m hip_backend.child` reads a job on stdin and
writes JSON lines on stdout: progress, notices, then one result or one failure.

Anything else that writes to stdout (a library's print, native code) is moved to
stderr first, so the protocol stream carries only protocol lines. Every error
becomes a typed failure line; the exit status is 0 whenever a line was written.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import IO

from core.measurement.protocol import (
    MeasureEvent,
    MeasureFailed,
    MeasureProgress,
    MeasureResult,
    encode_event,
)
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from hip_backend.engines import engine_measure
from hip_backend.errors import MeasureError, OutOfMemoryError
from hip_backend.host import CAPPED_ALLOCATION_TEXTS
from hip_backend.job import ChildJob
from hip_backend.parent_watch import watch_parent

Emit = Callable[[MeasureEvent], None]
PROGRESS_INTERVAL_S = 0.1


class _ProtocolOut:
    """Owns the real stdout; everything else printed goes to stderr."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self._stream: IO[str] = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()  # the mlx engine's memory-cap thread emits too
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def __call__(self, event: MeasureEvent) -> None:
        with self._lock:
            self._stream.write(encode_event(event) + "\n")
            self._stream.flush()


class _Throttle:
    """Progress lines at most every 100 ms per phase, plus each phase's last step."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._last: dict[str, float] = {}

    def __call__(self, phase: str, done: int, total: int, detail: str = "") -> None:
        now = time.monotonic()
        if done < total and now - self._last.get(phase, 0.0) < PROGRESS_INTERVAL_S:
            return
        self._last[phase] = now
        self.emit(MeasureProgress(phase, done, total, detail))


def _is_oom(exc: BaseException, capped: bool = False) -> bool:
    if isinstance(exc, MemoryError | OutOfMemoryError):
        return True
    if capped and any(t in str(exc).lower() for t in CAPPED_ALLOCATION_TEXTS):
        return True
    torch = sys.modules.get("torch")
    oom_type = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(
        words in text
        for words in (
            "out of memory",
            "can't allocate memory",
            "not enough memory",
            "unable to allocate",  # MLX's allocators
            "bad_alloc",
        )
    )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def measure(job: ChildJob, emit: Emit) -> MeasuredPeak:
    """Run the job on its engine (hip_backend/engines.py) and return its peak (raises
    MeasureError and the engine's own errors)."""
    return engine_measure(job.request.engine)(job, emit, _Throttle(emit))


def run_job(job: ChildJob, emit: Emit) -> None:
    """Measure and emit exactly one terminal event."""
    try:
        peak = measure(job, emit)
    except MeasureError as exc:
        emit(MeasureFailed(exc.failure()))
    except BaseException as exc:  # the parent must get a typed line, whatever broke
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        if _is_oom(exc, capped=job.request.host_memory_cap_bytes is not None):
            emit(MeasureFailed(MeasurementFailure(FailureKind.OUT_OF_MEMORY, _one_line(exc))))
        else:
            traceback.print_exc(file=sys.stderr)
            message = f"{type(exc).__name__}: {_one_line(exc)}"
            emit(MeasureFailed(MeasurementFailure(FailureKind.INTERNAL, message)))
    else:
        emit(MeasureResult(peak))


def main(argv: list[str] | None = None) -> int:
    """Entry point: job JSON on stdin, event lines on stdout."""
    watch_parent()  # gone with the vramscope that started it, whatever killed that
    emit = _ProtocolOut()
    try:
        job = ChildJob.from_json(sys.stdin.read())
    except (ValueError, TypeError) as exc:
        message = f"invalid job: {_one_line(exc)}"
        emit(MeasureFailed(MeasurementFailure(FailureKind.INTERNAL, message)))
        return 0
    run_job(job, emit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
