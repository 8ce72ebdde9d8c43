"""The two reads the explorer's first frame shows, started as the app is built.

The model (and the available memory the verdict needs) used to be read once the
first frame was out, and the estimate came a read and a second full frame later.
`FirstReads` starts both in daemon threads while Textual is still starting (its
stylesheets, the screen's widgets), so that the screen, as it mounts, usually finds
them answered and paints the estimate in its first frame. A read that takes longer
than `WAIT_S` answers later, as any read does (`Loader.read_all`).

The reads themselves (`read_model`, `probe_available`) turn every failure into a
value, as the loader's workers do.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from core.backend import Backend
from core.catalog.entry import CatalogEntry
from core.errors import VramscopeError
from core.estimate.available import AvailableMemory
from tui.deps import AppDeps
from tui.messages import FailedModel, LoadedGguf, LoadedModel

WAIT_S = 0.3
"""How long the screen, as it mounts, waits for a first read before it paints without it:
longer only delays the first frame of a read that hangs; the estimate came about this
much after the first frame when the reads waited for it."""

T = TypeVar("T")


def read_model(
    deps: AppDeps, name: str, entry: CatalogEntry | None, hub: bool = False
) -> LoadedModel | LoadedGguf | FailedModel:
    """Read a model (a worker thread); a failure is a `FailedModel`. A name that names a
    GGUF is read as `inspect` reads it (llama.cpp's load answers for it)."""
    started = deps.clock()
    if names_gguf(name):
        return _read_gguf(deps, name, started)
    try:
        if entry is not None:
            found = entry
        elif hub and deps.read_hub is not None:
            found = deps.read_hub(name)
        else:
            found = deps.resolve_entry(name)
        snapshot = deps.load_snapshot(found)
        return LoadedModel(found, snapshot, deps.clock() - started)
    except VramscopeError as exc:
        return FailedModel(name, str(exc))
    except Exception as exc:  # never let a bad model crash the app
        return unexpected_failure(name, exc)


def names_gguf(name: str) -> bool:
    """Whether a model name is one of `inspect`'s GGUF names: a `.gguf` file, a folder
    holding GGUF files (and no config.json), or `REPO:QUANT` (a colon in a name that is
    no path). Only the name and, for a folder, its listing are looked at."""
    from core.catalog.gguf_source import holds_gguf

    if name.endswith(".gguf"):
        return True
    try:
        path = Path(os.path.expanduser(name))
        if path.is_dir():
            return holds_gguf(path)
        return ":" in name and not os.path.lexists(path)
    except (OSError, ValueError):
        return False


def _read_gguf(deps: AppDeps, name: str, started: float) -> LoadedGguf | FailedModel:
    # The answer's code is imported here, on the worker: on the UI thread its first
    # import held the first GGUF frame 0.1-0.2 s on this 2-core machine.
    import core.gguf_load.answer  # noqa: F401
    from tui.gguf.question import GgufOnScreen

    hub = deps.read_hub is not None  # the command line's deps read the Hub, tests' may not
    try:
        found = deps.read_gguf(name, hub)
        if found is None:
            return FailedModel(name, f"{name}: names no GGUF model", gguf=True)
        on_hub = not os.path.lexists(os.path.expanduser(name))
        return LoadedGguf(GgufOnScreen(name, found, on_hub), deps.clock() - started)
    except VramscopeError as exc:
        return FailedModel(name, str(exc), gguf=True)
    except Exception as exc:  # never let a bad file crash the app
        return replace(unexpected_failure(name, exc), gguf=True)


def unexpected_failure(name: str, exc: BaseException) -> FailedModel:
    """A model read that broke in a way no reader names."""
    return FailedModel(name, f"{name}: unexpected {type(exc).__name__}: {exc}")


def probe_available(deps: AppDeps, backend: Backend) -> AvailableMemory:
    """This machine's available memory for `backend` (a worker thread); a probe that
    breaks means "nothing detected"."""
    try:
        return deps.detect_available(backend)
    except Exception as exc:
        return detection_failed(exc)


def detection_failed(exc: BaseException) -> AvailableMemory:
    """Nothing detected, and why."""
    return AvailableMemory(0, f"detection failed: {type(exc).__name__}")


def _in_thread(read: Callable[[], T], name: str) -> Future[T]:
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(read())
        except BaseException as exc:  # handed to whoever takes it (MemoryError...)
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


class FirstReads:
    """The model and available-memory reads for the screen's first state, in flight."""

    def __init__(self, deps: AppDeps, model: str, backend: Backend) -> None:
        self.model_name = model
        self.backend = backend
        self.model = _in_thread(lambda: read_model(deps, model, None), "vramscope-first-model")
        self.available = _in_thread(
            lambda: probe_available(deps, backend), "vramscope-first-available"
        )

    def answers(self, model: str, backend: Backend) -> bool:
        """True when these are the reads of this model and backend."""
        return (model, backend) == (self.model_name, self.backend)
