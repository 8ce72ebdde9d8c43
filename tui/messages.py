"""The explorer's messages from its reads: one type per kind of read, and what they carry.

The loader's thread workers post these to the screen (posting is thread-safe and
never blocks a worker); the screen applies them. Each read turns its failure into
a value, so every message carries an answer, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from core.backend import Backend
from core.catalog.entry import Catalog, CatalogEntry
from core.estimate.available import AvailableMemory
from core.estimate.snapshot import ModelSnapshot
from core.measurement.history import HistoryRead

if TYPE_CHECKING:  # the calibration code, the Fits view's rows, the device: worker reads
    from core.answer.fit import FitRow
    from core.calibration.record import Calibration
    from core.calibration.run import CalibrateRun
    from core.device_memory import DeviceMemory
    from core.gguf_load.fit import GgufFitRow
    from tui.gguf.question import GgufOnScreen


@dataclass(frozen=True)
class LoadedModel:
    """A model read by a worker."""

    entry: CatalogEntry
    snapshot: ModelSnapshot
    seconds: float


@dataclass(frozen=True)
class LoadedGguf:
    """A GGUF model read by a worker (its header: llama.cpp's load is answered from it)."""

    model: GgufOnScreen
    seconds: float


@dataclass(frozen=True)
class FailedModel:
    """A model that could not be read, and why, in one line."""

    name: str
    message: str
    gguf: bool = False
    """The name named a GGUF (a `.gguf` file, a folder of them, `REPO:QUANT`): the model
    on screen stays, and the line goes to the status line."""


class ModelRead(Message):
    """A model read answered; `request` tells a newer pick's answer from an overtaken one."""

    def __init__(self, result: LoadedModel | LoadedGguf | FailedModel, request: int) -> None:
        super().__init__()
        self.result = result
        self.request = request


class ModelReading(Message):
    """A model read is still in flight after `seconds` (the loader's ticker)."""

    def __init__(self, name: str, seconds: float, request: int) -> None:
        super().__init__()
        self.name = name
        self.seconds = seconds
        self.request = request

    @property
    def text(self) -> str:
        """The breakdown's line while it waits."""
        return f"{reading_text(self.name)} {self.seconds:.1f} s"


class CatalogRead(Message):
    """The catalog, or why it could not be built."""

    def __init__(self, catalog: Catalog | str, gguf: tuple[CatalogEntry, ...] = ()) -> None:
        super().__init__()
        self.catalog = catalog
        self.gguf = gguf
        """The GGUF files found where the catalog looks (the list's GGUF group)."""


class AvailableRead(Message):
    """The available memory detected on this machine for a backend (mlxcel's walk)."""

    def __init__(self, available: AvailableMemory, backend: Backend) -> None:
        super().__init__()
        self.available = available
        self.backend = backend


class DeviceRead(Message):
    """This machine's device memory (None: nothing readable, `problem` says why)."""

    def __init__(self, device: DeviceMemory | None, problem: str = "") -> None:
        super().__init__()
        self.device = device
        self.problem = problem


class HistoryLoaded(Message):
    """The measurement history and the file it came from (None: no history store)."""

    def __init__(self, path: Path | None, history: HistoryRead) -> None:
        super().__init__()
        self.path = path
        self.history = history


class CalibrationsRead(Message):
    """vramscope's calibrations to choose from, and warnings about their file."""

    def __init__(self, calibrations: tuple[Calibration, ...], warnings: tuple[str, ...]) -> None:
        super().__init__()
        self.calibrations = calibrations
        self.warnings = warnings


class Recalibrated(Message):
    """A recalibration from the history finished: what it fitted and refused, or the one
    line why it could not run."""

    def __init__(self, outcome: CalibrateRun | str) -> None:
        super().__init__()
        self.outcome = outcome


@dataclass(frozen=True)
class FitPick:
    """One row of the Fits view and the catalog entry it came from (Enter opens it)."""

    entry: CatalogEntry
    row: FitRow
    cells: tuple[str, ...] = ()
    """The row's table cells (`tui.render.fit_table.table_row`), built on the worker;
    empty for a row without a number."""


@dataclass(frozen=True)
class GgufPick:
    """A GGUF row of the Fits view (Enter opens its file with its `--n-gpu-layers`)."""

    row: GgufFitRow
    cells: tuple[str, ...]

    @property
    def gpu_layers(self) -> int | None:
        """The `--n-gpu-layers` to open it with: the most that fits when the layers asked
        do not fit (None: keep the explorer's)."""
        answer = self.row.answer
        if answer is None or answer.fits is not False or answer.gpu_layers is None:
            return None
        return answer.gpu_layers


class GgufRowsRead(Message):
    """The Fits view's GGUF rows (`fit`'s: one per quant file), ranked."""

    def __init__(self, picks: tuple[GgufPick, ...]) -> None:
        super().__init__()
        self.picks = picks


class FitRowsRead(Message):
    """Rows of the Fits view computed since the last message; `done` on the last one."""

    def __init__(self, picks: tuple[FitPick, ...], skipped: tuple[str, ...], done: bool) -> None:
        super().__init__()
        self.picks = picks
        self.skipped = skipped
        self.done = done


class WhatIfsRead(Message):
    """The model's quantization what-ifs (scheme -> weight bytes, or why there are none)."""

    def __init__(self, what_ifs: dict[str, int | str], request: int) -> None:
        super().__init__()
        self.what_ifs = what_ifs
        self.request = request


def reading_text(name: str) -> str:
    """The breakdown's line as a model read starts."""
    return f"Reading {name}…"


class HubRowsRead(Message):
    """The Fits view's Hub scope: rows of one listing (bounds first, then each repo's
    exact rows as it is read), a status line, and `done` on the last one."""

    def __init__(self, query: int, rows: tuple[object, ...], status: str, done: bool) -> None:
        super().__init__()
        self.query = query
        """Which query these rows answer (an older query's are dropped)."""
        self.rows = rows
        """`core.fit.hub.HubFitRow`s: each replaces the rows of its repo."""
        self.status = status
        self.done = done
