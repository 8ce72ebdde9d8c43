"""Everything the explorer reads from outside: catalog, model, available memory, history.

Each read runs on a Textual thread worker and answers the screen with one typed
message (`tui.messages`: posting is thread-safe and never blocks the worker); a
model read in flight also posts `ModelReading` every `TICK_S`. The loader touches
no widget: the screen applies the messages, after `take_*` has kept what was read
(and dropped a model read that a newer pick has overtaken). Every read turns its
failure into a value, so no worker raises.

Quitting never waits for a read that hangs (a stalled network mount): the app
installs `DaemonExecutor` as its loop's default executor, so thread workers run
in daemon threads that the interpreter does not join at exit.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer

from core.backend import Backend
from core.catalog.entry import Catalog, CatalogEntry
from core.errors import VramscopeError
from core.estimate.available import AvailableMemory
from core.estimate.snapshot import ModelSnapshot
from core.measurement.history import HistoryRead
from core.measurement.result import MeasuredPeak
from tui.controllers.first_reads import (
    WAIT_S,
    FirstReads,
    detection_failed,
    probe_available,
    read_model,
    unexpected_failure,
)
from tui.deps import AppDeps, what_ifs_of
from tui.messages import (
    AvailableRead,
    CalibrationsRead,
    CatalogRead,
    DeviceRead,
    FailedModel,
    HistoryLoaded,
    LoadedGguf,
    LoadedModel,
    ModelRead,
    ModelReading,
    Recalibrated,
    WhatIfsRead,
)
from tui.model.state import QUANTIZE_AS

if TYPE_CHECKING:
    from core.calibration.record import Calibration
    from core.calibration.run import CalibrateRun
    from core.device_memory import DeviceMemory
    from tui.gguf.question import GgufAnswers

TICK_S = 0.5
"""How often the seconds of a read in flight are repainted."""
HELD_LIMIT_S = 1.0
"""The reads held for the first frame start after this many seconds should it never
be written (`start_held_reads`)."""
AFTER_MODEL_S = 0.5
"""The catalog and history reads start when the first model read answers, or this
many seconds after it started, whichever comes first."""


class DaemonExecutor(ThreadPoolExecutor):
    """The event loop's executor for thread workers: one daemon thread per job, never joined.

    asyncio joins its default executor when the loop closes, and the standard pool's
    threads are joined at interpreter exit; either would make quitting wait for a
    read that hangs. A job here that outlives the app simply dies with the process.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to the awaiting worker, as the pool does
                future.set_exception(exc)

        threading.Thread(target=run, name="vramscope-worker", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to join: the threads are daemons."""


class Loader:
    """The reads of one explorer screen and what they found."""

    def __init__(
        self,
        screen: Screen[Any],
        deps: AppDeps,
        backend: Backend,
        first_reads: FirstReads | None = None,
    ) -> None:
        self._screen = screen
        self.deps = deps
        self.backend = backend
        self.catalog: Catalog | str | None = None
        """The catalog, or why it could not be built (None until read)."""
        self.detected: dict[Backend, AvailableMemory] = {}
        """mlxcel's detected available memory, per backend asked for (its walk reads the
        backend's own device: amdgpu sysfs for ROCm, nvidia-smi for CUDA)."""
        self.device: DeviceMemory | None = None
        """The device's total, used and free memory (None until read, or unreadable)."""
        self.device_problem = ""
        self.history = HistoryRead()
        self.history_path: Path | None = None
        self.entry: CatalogEntry | None = None
        self.snapshot: ModelSnapshot | None = None
        self.failure: FailedModel | None = None
        self.gguf: GgufAnswers | None = None
        """The GGUF model on screen and its answers, kept per question (None: the model
        on screen is no GGUF)."""
        self.gguf_failure: FailedModel | None = None
        """The last GGUF that could not be read while another model stayed on screen."""
        self.gguf_entries: tuple[CatalogEntry, ...] = ()
        """The GGUF files the model list shows beside the catalog's models."""
        self.calibrations: tuple[Calibration, ...] = ()
        """vramscope's calibrations to choose from (`deps.calibrations`), once read."""
        self.what_ifs: dict[str, int | str] = {}
        """The model's quantization what-ifs (scheme -> weight bytes, or why not); empty
        until read."""
        self.waiting = {"catalog", "available", "model", "history", "calibrations", "device"}
        self.loading_since = 0.0
        self._request = 0
        self._ticker: Timer | None = None
        self._held: list[Callable[[], object]] = []
        self._held_limit: Timer | None = None
        """Starts the held reads should the first frame never be written."""
        self._frame_out = False
        """True once the first frame is out (`start_held_reads`): reads asked for with
        `first` start at once from then on."""
        self._first_reads = first_reads
        self._after_model: list[Callable[[], object]] = []
        self._hub_requests: dict[int, str] = {}
        self.answered_hub = ""
        """The repo id when the model read `take_model` last kept was a Hub read."""

    @property
    def calibrations_read(self) -> tuple[Calibration, ...] | None:
        """The calibrations for `core.answer`, None until read: the answer then leaves the
        calibrated estimate out, and no calibration code is loaded for the first frame."""
        return None if "calibrations" in self.waiting else self.calibrations

    @property
    def settled(self) -> bool:
        """True once every read asked for so far has answered."""
        return not self.waiting

    def _run(
        self,
        kind: str,
        read: Callable[[], Message],
        *,
        first: bool = False,
        after_model: bool = False,
    ) -> None:
        screen = self._screen
        self.waiting.add(kind)

        def work() -> None:
            message = read()
            with contextlib.suppress(Exception):  # the app quit meanwhile: nobody to tell
                screen.post_message(message)

        start = partial(
            screen.run_worker,
            work,
            name=f"read {kind}",
            group=kind,
            thread=True,
            exit_on_error=False,
        )
        if after_model:
            self._after_model.append(start)
        elif first and not self._frame_out:
            self._held.append(start)
        else:
            start()

    def read_all(
        self, model: str, backend: Backend | None = None
    ) -> list[ModelRead | AvailableRead]:
        """The first reads: catalog, available memory (for `backend`, the one the screen
        opens on; this machine's when None), history and the model.

        The model and the available memory come from the app's `FirstReads`, started
        while Textual started: those answered within `WAIT_S` are returned, for the
        screen to apply before its first frame; the others answer as messages. Without
        them, these two reads wait for `start_held_reads`, as the others do, which the
        app calls once the first frame is painted: their imports (the catalog's) and
        file reads would otherwise hold the interpreter while it is drawn. Should that
        call never come, they start `HELD_LIMIT_S` after the screen mounted.
        """
        first = backend or self.backend  # the backend the screen opens on
        reads, self._first_reads = self._first_reads, None
        answered: list[ModelRead | AvailableRead] = []
        if reads is not None and reads.answers(model, first):
            answered = self._take_first_reads(reads)
        else:
            self.read_model(model, None, first=True)  # first: the estimate waits for it
            self._run("available", self._available_read(first), first=True)
        # The list and the history wait for the model: on two cores, four reads and the
        # frames at once held the model's answer back by 50-60 ms.
        self._run("history", self._read_history, after_model=True)
        self._run("catalog", lambda: CatalogRead(*self._build_catalog()), after_model=True)
        self._run("calibrations", self._read_calibrations, after_model=True)
        self._run("device", self._read_device, after_model=True)
        # Not after the next refresh: that came just before the first frame was written,
        # and four reads started then slowed its layout and render down.
        self._held_limit = self._screen.set_timer(HELD_LIMIT_S, self.start_held_reads)
        return answered

    def _take_first_reads(self, reads: FirstReads) -> list[ModelRead | AvailableRead]:
        request = self._begin_model_read(reads.model_name)
        pending: list[tuple[Future[Any], Callable[[Future[Any]], ModelRead | AvailableRead]]] = [
            (reads.available, partial(_available_message, reads.backend)),
            (reads.model, partial(_model_message, reads.model_name, request)),
        ]
        wait([future for future, _ in pending], timeout=WAIT_S)
        answered: list[ModelRead | AvailableRead] = []
        for future, message in pending:
            if future.done():
                answered.append(message(future))
            else:  # posted when it answers (thread-safe), as a worker's message is
                future.add_done_callback(partial(self._post, message))
        return answered

    def _post(self, message: Callable[[Future[Any]], Message], future: Future[Any]) -> None:
        with contextlib.suppress(Exception):  # the app quit meanwhile: nobody to tell
            self._screen.post_message(message(future))

    def frame_written(self) -> None:
        """The first frame is out: the held reads wait for `start_held_reads`, no longer
        for `HELD_LIMIT_S` (on a loaded machine that limit fell while the body was being
        laid out, and the reads held its first frame back)."""
        if self._held_limit is not None:
            self._held_limit.stop()
            self._held_limit = None

    def start_held_reads(self) -> None:
        """Start the reads `read_all` held back (once; later calls do nothing)."""
        self.frame_written()
        if self._frame_out:
            return
        self._frame_out = True
        held, self._held = self._held, []
        for start in held:
            start()
        if "model" in self.waiting:  # a model read that hangs must not keep the list
            self._screen.set_timer(AFTER_MODEL_S, self._start_after_model)
        else:
            self._start_after_model()

    def _start_after_model(self) -> None:
        after, self._after_model = self._after_model, []
        for start in after:
            start()

    def _available_read(self, backend: Backend) -> Callable[[], AvailableRead]:
        return lambda: AvailableRead(probe_available(self.deps, backend), backend)

    def detect_for(self, backend: Backend) -> None:
        """Detect the available memory for `backend`, once (a worker; the screen repaints
        when it answers)."""
        if backend not in self.detected and f"available-{backend.value}" not in self.waiting:
            self._run(f"available-{backend.value}", self._available_read(backend))

    def read_history(self) -> None:
        """(Re-)read the measurement history."""
        self._run("history", self._read_history)

    def read_calibrations(self) -> None:
        """(Re-)read the calibrations to choose from."""
        self._run("calibrations", self._read_calibrations)

    def recalibrate(self, peak: MeasuredPeak) -> None:
        """Fit the history's runs of `peak`'s engine, backend and device, as `vramscope
        calibrate --engine E --backend B --device D` does, and save the fit."""
        self._run("recalibrate", lambda: Recalibrated(self._recalibrate(peak)))

    def read_catalog(self) -> None:
        """(Re-)read the catalog (after a Hub read added a model to the store)."""
        self._run("catalog", lambda: CatalogRead(*self._build_catalog()))

    def read_model(
        self, name: str, entry: CatalogEntry | None, *, first: bool = False, hub: bool = False
    ) -> None:
        """Read a model; an answer to an older request is dropped when it arrives. With
        `hub`, a repo id is read from the Hub (`AppDeps.read_hub`) when nothing local has it.

        Until it answers, `ModelReading` says for how long it has been read (the screen
        shows `reading_text(name)` as the read starts).
        """
        request = self._begin_model_read(name, hub)
        self._run(
            "model",
            lambda: ModelRead(read_model(self.deps, name, entry, hub), request),
            first=first,
        )

    def _begin_model_read(self, name: str, hub: bool = False) -> int:
        """A new model request: its number, and the ticker that says how long it takes."""
        self._request += 1
        request = self._request
        if hub:
            self._hub_requests[request] = name
        self.loading_since = self.deps.clock()
        self.waiting.add("model")

        def tick() -> None:
            seconds = self.deps.clock() - self.loading_since
            self._screen.post_message(ModelReading(name, seconds, request))

        self._stop_ticker()
        self._ticker = self._screen.set_interval(TICK_S, tick)
        return request

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    def take_model(self, message: ModelRead) -> bool:
        """Keep a model read; False for one a newer pick overtook."""
        hub = self._hub_requests.pop(message.request, "")
        if message.request != self._request:
            return False
        self.answered_hub = hub
        request = message.request
        self._stop_ticker()
        if self._frame_out:  # else the first frame starts them (`start_held_reads`)
            self._start_after_model()
        result = message.result
        if isinstance(result, FailedModel) and result.gguf and self._on_screen:
            # A bad GGUF never takes the model on screen away: its line is the status line's.
            self.gguf_failure = result
            self.waiting.discard("model")
            return True
        self.gguf_failure = None
        self.what_ifs = {}
        if isinstance(result, LoadedGguf):
            from tui.gguf.question import GgufAnswers

            self.entry, self.snapshot, self.failure = None, None, None
            self.gguf = GgufAnswers(result.model)
            self.waiting.discard("whatif")
        elif isinstance(result, LoadedModel):
            self.gguf = None
            self.entry, self.snapshot = result.entry, result.snapshot
            self.failure = None
            entry = self.entry
            # The "Quantize as" what-ifs need the tensor list: read after the model answers.
            self._run(
                "whatif",
                lambda: WhatIfsRead(self._read_what_ifs(entry), request),
                first=True,  # not before the first frame is out
            )
        else:
            self.entry, self.snapshot, self.failure = None, None, result
            self.gguf = None
            self.waiting.discard("whatif")  # an overtaken model's what-ifs are dropped
        self.waiting.discard("model")
        return True

    @property
    def _on_screen(self) -> bool:
        """A model is on screen (read, safetensors or GGUF)."""
        return self.snapshot is not None or self.gguf is not None

    def take_what_ifs(self, message: WhatIfsRead) -> bool:
        """Keep the what-ifs of the model on screen; False for an overtaken model's."""
        if message.request != self._request:
            return False
        self.what_ifs = message.what_ifs
        self.waiting.discard("whatif")
        return True

    def still_reading(self, message: ModelReading) -> bool:
        """True when a tick is for the read in flight (not one answered since it was posted)."""
        return message.request == self._request and "model" in self.waiting

    def take_catalog(self, message: CatalogRead) -> None:
        """Keep the catalog (or why there is none)."""
        self.catalog = message.catalog
        self.gguf_entries = message.gguf
        self.waiting.discard("catalog")

    def take_available(self, message: AvailableRead) -> None:
        """Keep the detected available memory (for its backend)."""
        self.detected[message.backend] = message.available
        self.waiting.discard("available")
        self.waiting.discard(f"available-{message.backend.value}")

    def take_device(self, message: DeviceRead) -> None:
        """Keep the device reading."""
        self.device, self.device_problem = message.device, message.problem
        self.waiting.discard("device")

    def take_history(self, message: HistoryLoaded) -> None:
        """Keep the history and its path."""
        self.history_path, self.history = message.path, message.history
        self.waiting.discard("history")

    def take_calibrations(self, message: CalibrationsRead) -> None:
        """Keep the calibrations."""
        self.calibrations = message.calibrations
        self.waiting.discard("calibrations")

    def take_recalibrated(self) -> None:
        """A recalibration answered."""
        self.waiting.discard("recalibrate")

    @property
    def problem(self) -> str:
        """Why the model on screen could not be read ("" when it could)."""
        return self.failure.message if self.failure is not None else ""

    @property
    def trained_context(self) -> int | None:
        """What the model was trained for (`core.answer.context.trained_context`: the
        config, the family's default, a rope scaling that stretches it)."""
        from core.answer.context import trained_context

        if self.gguf is not None:
            return self.gguf.model.trained_context
        found = trained_context(self.snapshot.config) if self.snapshot is not None else None
        return found.tokens if found is not None else None

    # --- the reads (worker threads): each failure becomes a value ---------------------

    def _build_catalog(self) -> tuple[Catalog | str, tuple[CatalogEntry, ...]]:
        try:
            catalog = self.deps.build_catalog()
        except Exception as exc:  # a broken catalog must never take the app down
            return f"cannot list models: {type(exc).__name__}: {exc}", ()
        try:
            return catalog, self.deps.gguf_entries(catalog)
        except Exception:  # the GGUF files are an extra beside the list: never a crash
            return catalog, ()

    def _read_device(self) -> DeviceRead:
        try:
            device = self.deps.read_device(self.backend)
        except Exception as exc:  # a reading that breaks means "nothing readable"
            return DeviceRead(None, f"cannot read the device: {type(exc).__name__}: {exc}")
        return DeviceRead(device, "" if device else "no device memory is readable")

    def _read_history(self) -> HistoryLoaded:
        try:
            store = self.deps.history()
            if store is None:
                return HistoryLoaded(None, HistoryRead())
            return HistoryLoaded(store.path, store.read())
        except Exception as exc:  # the reader skips damaged lines; this is anything else
            return HistoryLoaded(None, HistoryRead(warnings=[f"cannot read the history: {exc}"]))

    def _read_calibrations(self) -> CalibrationsRead:
        try:
            calibrations, warnings = self.deps.calibrations()
            return CalibrationsRead(calibrations, warnings)
        except Exception as exc:  # the store turns a bad file into a warning; this is anything else
            return CalibrationsRead((), (f"cannot read the calibrations: {exc}",))

    def _recalibrate(self, peak: MeasuredPeak) -> CalibrateRun | str:
        from core import __version__
        from core.calibration.run import calibrate
        from core.measurement.comparison import device_backend
        from tui.controllers.ranks import entry_tensors  # the load's dimensions, as shown

        deps = self.deps
        try:
            store = deps.history()
            if store is None:
                return "no measurement history is kept, so there is nothing to calibrate on"
            return calibrate(
                lambda name: deps.load_snapshot(deps.resolve_entry(name)),
                __version__,
                history=store,
                engine=peak.engine,
                backend=device_backend(peak.device_kind),
                device=peak.arch or peak.device_name or None,
                store_path=deps.calibration_store(),
                tensors_of=lambda name, snap: entry_tensors(deps.resolve_entry(name), snap),
            )
        except VramscopeError as exc:
            return str(exc)
        except Exception as exc:  # a recalibration that breaks must not take the app down
            return f"cannot recalibrate: {type(exc).__name__}: {exc}"

    def _read_what_ifs(self, entry: CatalogEntry) -> dict[str, int | str]:
        try:
            return what_ifs_of(self.deps.fit_models, entry)
        except Exception as exc:  # the what-if is an extra: never a crash
            return dict.fromkeys(QUANTIZE_AS[1:], f"cannot read the tensor list: {exc}")


def _model_message(name: str, request: int, future: Future[LoadedModel | FailedModel]) -> ModelRead:
    exc = future.exception()
    if exc is None:
        return ModelRead(future.result(), request)
    return ModelRead(unexpected_failure(name, exc), request)


def _available_message(backend: Backend, future: Future[AvailableMemory]) -> AvailableRead:
    exc = future.exception()
    if exc is None:
        return AvailableRead(future.result(), backend)
    return AvailableRead(detection_failed(exc), backend)
