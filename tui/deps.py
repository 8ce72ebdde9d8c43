"""The explorer's collaborators, injected so tests and screenshots never depend on the machine.

Everything that reads files, probes the hardware or tells the time goes through
`AppDeps`. The app calls the reading ones only from worker threads. Tests and
`vramscope screenshot` pass fixed detections and the built-in profiles; the
command line passes `default_deps()`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from core.backend import Backend, BackendChoice
from core.catalog.entry import Catalog, CatalogEntry, EntryOrigin
from core.environment import read_env
from core.estimate.available import MEMORY_LIMIT_ENV, AvailableMemory
from core.estimate.snapshot import ModelSnapshot
from core.probes.device_nodes import detect_backend

if TYPE_CHECKING:  # the reads' code (probes, history, calibration): worker threads
    from core.answer.fit import FitModel
    from core.calibration.record import Calibration
    from core.catalog.gguf_source import GgufSource
    from core.device_memory import DeviceMemory
    from core.measurement.history import HistoryStore
    from core.measurement.request import MeasureRequest
    from core.measurement.run import RunEvent


CalibrationCandidates = tuple[tuple["Calibration", ...], tuple[str, ...]]
"""Calibrations to choose from, and warnings about the file they came from."""


def _default_candidates() -> CalibrationCandidates:
    from core.calibration.select import default_candidates

    return default_candidates()


class MeasureHandle(Protocol):
    """What the explorer needs of `hip_backend.RunHandle`."""

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""

    @property
    def done(self) -> bool:
        """True once the terminal event was delivered."""

    def cancel(self) -> None:
        """Kill the child; a CANCELLED failure ends the run."""


StartMeasurement = Callable[["MeasureRequest", Callable[["RunEvent"], None]], MeasureHandle]
"""`hip_backend.start_run`'s shape: returns at once, events come from other threads."""


def start_with_hip_backend(
    request: MeasureRequest, on_event: Callable[[RunEvent], None]
) -> MeasureHandle:
    """The real launcher, imported only now (it never imports torch itself)."""
    from hip_backend import start_run

    handle: MeasureHandle = start_run(request, on_event)
    return handle


def _default_history() -> HistoryStore | None:
    from core.measurement.history import HistoryStore  # the read's: a worker thread

    return HistoryStore.default()


@dataclass(frozen=True)
class AppDeps:
    """What the explorer needs from the outside world."""

    build_catalog: Callable[[], Catalog]
    """The model list (worker thread)."""
    resolve_entry: Callable[[str], CatalogEntry]
    """A MODEL name to its entry, as `inspect` resolves it (worker thread)."""
    load_snapshot: Callable[[CatalogEntry], ModelSnapshot]
    """Read a model (worker thread)."""
    detect_backend: Callable[[], BackendChoice]
    """This machine's backend (device nodes only; called once, before the app runs)."""
    detect_available: Callable[[Backend], AvailableMemory]
    """This machine's available memory (worker thread)."""
    env: Mapping[str, str | None]
    """The estimator's environment variables (`core.environment.read_env`)."""
    clock: Callable[[], float] = time.perf_counter
    """Seconds, for how long a model read (or a measurement) has taken."""
    start_measurement: StartMeasurement = start_with_hip_backend
    """Start a real load in a child process (`m`; called from a worker thread)."""
    history: Callable[[], HistoryStore | None] = _default_history
    """The measurement history the launcher appends to (None: none is kept); read in a
    worker thread."""
    calibrations: Callable[[], CalibrationCandidates] = lambda: ((), ())
    """vramscope's calibrations to choose from, and a warning about the file (worker
    thread): none unless given; the command line passes the user's and the built-in
    one (`core.calibration.select.default_candidates`, as `inspect --calibrated`)."""
    calibration_store: Callable[[], Path | None] = lambda: None
    """Where recalibrating after `m` saves (None: the user's calibration file)."""
    read_hub: Callable[[str], CatalogEntry] | None = None
    """Read a repo id from the Hub into vramscope's Hub store and give its entry, as
    `inspect org/name` does (worker thread; HF_HUB_OFFLINE answers from the store or
    refuses); None: the model list offers no Hub read."""
    fit_models: Callable[[Catalog], Iterator[tuple[CatalogEntry, FitModel | str]]] = field(
        default_factory=lambda: partial(_fit_models, use_cache=True)
    )
    """Each entry read for the Fits view (or why it was skipped), one by one, with the
    what-ifs cached on disk as `vramscope fit` keeps them (worker thread)."""
    read_device: Callable[[Backend], DeviceMemory | None] = field(
        default_factory=lambda: _read_device
    )
    """This machine's device memory, total, used and free, as `--memory-limit free|total`
    reads it (worker thread)."""
    read_gguf: Callable[[str, bool], GgufSource | None] = field(default_factory=lambda: read_gguf)
    """The GGUF model a name names (a `.gguf` file, a folder of them, with the bool
    `REPO:QUANT` on the Hub too), as `inspect` reads it; None when it names no GGUF
    (worker thread)."""
    gguf_entries: Callable[[Catalog], tuple[CatalogEntry, ...]] = field(
        default_factory=lambda: gguf_entries
    )
    """The GGUF files the model list shows beside the catalog's models (worker thread)."""


# core.catalog.resolve (folders, the HF cache, built-in profiles, the disk cache) is imported
# by the reads themselves, on the worker threads: the first frame never waits for it.


def _fit_models(catalog: Catalog, use_cache: bool) -> Iterator[tuple[CatalogEntry, FitModel | str]]:
    from core.errors import VramscopeError
    from core.fit.models import fit_entries, fit_reader

    with fit_reader(use_cache=use_cache) as reader:
        for entry in fit_entries(catalog):
            try:
                yield entry, reader.read(entry)
            except VramscopeError as exc:  # as `vramscope fit` says it
                yield entry, f"{entry.name}: skipped: {exc}"


def read_gguf(name: str, hub: bool) -> GgufSource | None:
    """`inspect`'s way in for a GGUF: a file, a folder holding GGUF files, and (with
    `hub`) `REPO:QUANT`, from the Hugging Face cache or else the Hub's headers. None
    for any other name (nothing is imported or read for it: the first frame's model)."""
    from core.catalog.gguf_source import read_gguf_source

    options = None
    if hub and ":" in name:
        from core.hub.remote import HubOptions

        options = HubOptions()
    return read_gguf_source(name, options)


def gguf_entries(catalog: Catalog) -> tuple[CatalogEntry, ...]:
    """The GGUF quant files where `fit` finds them (`core.gguf_load.fit`): the catalog's
    models folders (and the folders in them) and its Hugging Face cache, where
    `llama-server -hf` downloads. Listed by name, size on disk and the context length
    the header's first 64 KiB name (`peek_context_length_of`); the rest of the header
    is read when one is picked."""
    from core.catalog.entry import ORIGIN_GGUF
    from core.estimate.weights import WeightsSource
    from core.gguf.local import part_paths, peek_context_length_of
    from core.gguf_load.fit import local_gguf_files, name_quant

    found = []
    for f in local_gguf_files(catalog.models_dirs, catalog.hf_cache_dir):
        try:
            size = sum(p.stat().st_size for p in part_paths(f.path))
        except (OSError, ValueError):
            continue  # gone since it was listed, or a part missing: picking it says which
        found.append(
            CatalogEntry(
                name=f"{f.model}/{f.path.name}",
                origin=ORIGIN_GGUF,
                format_label=f"GGUF {name_quant(f.path.name) or ''}".rstrip(),
                weight_bytes=size,  # the list's size: the files on disk, header and all
                weights_source=WeightsSource.GGUF_FILE_SIZE,
                kv_kind=None,
                max_position_embeddings=peek_context_length_of(f.path),
                weights_on_disk=True,
                path=f.path,
            )
        )
    return tuple(found)


def _available(backend: Backend, env_limit: str | None) -> AvailableMemory:
    from core.device.available import read_available_memory

    return read_available_memory(backend, env_limit=env_limit)


def _read_device(backend: Backend) -> DeviceMemory | None:
    from core.device.reading import read_device_memory

    return read_device_memory(backend)


def what_ifs_of(
    fit_models: Callable[[Catalog], Iterator[tuple[CatalogEntry, FitModel | str]]],
    entry: CatalogEntry,
) -> dict[str, int | str]:
    """One entry's what-ifs through `fit_models` (its cache too), or why there are none."""
    from core.answer.quantize import SCHEMES

    for _, model in fit_models(Catalog((entry,))):
        if isinstance(model, str):
            return dict.fromkeys(SCHEMES, model)
        return {q.word: v for q, v in model.facts.what_ifs.items()}
    return {}


def _build_catalog(models_dirs: tuple[Path, ...]) -> Catalog:
    from core.catalog.resolve import build_catalog

    return build_catalog(models_dirs)


def _resolve(name: str, models_dirs: tuple[Path, ...]) -> CatalogEntry:
    from core.catalog.resolve import resolve_entry

    return resolve_entry(name, models_dirs)


def _read_hub(name: str, models_dirs: tuple[Path, ...]) -> CatalogEntry:
    from core.catalog.resolve import resolve_entry
    from core.hub.remote import HubOptions

    # `inspect org/name`'s resolution: a local copy wins, else the Hub (or its stored copy).
    return resolve_entry(name, models_dirs, hub=HubOptions())


def _load(entry: CatalogEntry) -> ModelSnapshot:
    from core.catalog.resolve import entry_snapshot

    # The display name is what the banner's `Model:` line would show for `inspect`.
    display = str(entry.path) if entry.origin is EntryOrigin.FOLDER and entry.path else entry.name
    return entry_snapshot(entry, display)


def default_deps(models_dirs: Sequence[Path] = ()) -> AppDeps:
    """The real machine: the full catalog, device probes and this process's environment."""
    env = read_env()
    dirs = tuple(models_dirs)
    return AppDeps(
        build_catalog=partial(_build_catalog, dirs),
        resolve_entry=partial(_resolve, models_dirs=dirs),
        load_snapshot=_load,
        detect_backend=detect_backend,
        detect_available=partial(_available, env_limit=env.get(MEMORY_LIMIT_ENV)),
        env=env,
        calibrations=_default_candidates,
        read_hub=partial(_read_hub, models_dirs=dirs),
    )


GFX1151_MACHINE = BackendChoice(Backend.ROCM, True, "/dev/kfd (AMD KFD) present")
"""The machine of mlxcel's worked example, for demos and screenshots."""


def builtin_deps(
    available: AvailableMemory,
    machine: BackendChoice = GFX1151_MACHINE,
    env: Mapping[str, str | None] | None = None,
    clock: Callable[[], float] | None = None,
    history: HistoryStore | None = None,
    hub: bool = False,
    device: DeviceMemory | None = None,
) -> AppDeps:
    """A machine-independent world: built-in profiles only, fixed detections, no environment,
    and no measurement history unless one is given. `m` still measures for real. With
    `hub`, the Hub too: reads through `HF_ENDPOINT` and the Hub store under
    `XDG_CACHE_HOME` as this process's environment has them (tests point both at a
    local server and a temporary folder), and the copies read before are listed."""

    def catalog() -> Catalog:
        from core.catalog.resolve import build_catalog

        return build_catalog(include_hf_cache=False, include_hub=hub, env=None if hub else {})

    def resolve(name: str) -> CatalogEntry:
        from core.catalog.resolve import match_entry

        return match_entry(catalog(), name)  # the CLI's rules and its closest-name errors

    return AppDeps(
        build_catalog=catalog,
        resolve_entry=resolve,
        load_snapshot=_load,
        detect_backend=lambda: machine,
        detect_available=lambda backend: available,
        env=dict(env or {}),
        clock=clock or (lambda: 0.0),
        history=lambda: history,
        read_hub=partial(_read_hub, models_dirs=()) if hub else None,
        fit_models=partial(_fit_models, use_cache=False),
        read_device=lambda backend: device,
        read_gguf=lambda name, read_hub: read_gguf(name, read_hub and hub),
    )
