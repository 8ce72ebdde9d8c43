"""The Fits view's rows, computed off the UI thread and handed over as they come.

One thread worker walks the catalog (`AppDeps.fit_models`: the same reads and what-if
cache as `vramscope fit`) and turns each model into its rows with
`core.answer.fit.model_rows` for the explorer's question. It posts `FitRowsRead`
with the first model's rows at once, then at most every `BATCH_S`, and a last one
with `done`; the screen ranks and paints them. Closing the view sets `stop`, and
the walk ends at the next model.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from core.answer.question import Question
from core.catalog.entry import Catalog
from tui.deps import AppDeps
from tui.messages import FitPick, FitRowsRead, GgufPick, GgufRowsRead

if TYPE_CHECKING:
    from core.gguf_load.fit import GgufAsk, GgufFile

BATCH_S = 0.05
"""Rows are handed over at most this often (the first model's at once)."""


class FitRowsController:
    """The one walk of a Fits view over the catalog."""

    def __init__(self, screen: Screen[Any], deps: AppDeps) -> None:
        self._screen = screen
        self._deps = deps
        self._stop = threading.Event()

    def start(
        self, catalog: Catalog | None, question: Question, gguf: GgufAsk | None = None
    ) -> None:
        """Walk `catalog` (None: build it first) on a thread worker, asking `question`;
        with `gguf`, then the GGUF files where `fit` finds them, asking llama.cpp's."""
        self._screen.run_worker(
            lambda: self._walk(catalog, question, gguf),
            name="fit rows",
            group="fit-rows",
            thread=True,
            exit_on_error=False,
        )

    def stop(self) -> None:
        """End the walk at the next model (the view closed)."""
        self._stop.set()

    def _post(self, picks: list[FitPick], skipped: list[str], done: bool) -> None:
        with contextlib.suppress(Exception):  # the app quit meanwhile: nobody to tell
            self._screen.post_message(FitRowsRead(tuple(picks), tuple(skipped), done))

    def _walk(self, catalog: Catalog | None, question: Question, gguf: GgufAsk | None) -> None:
        from core.answer.fit import QUANTIZATION_CHOICES, model_rows
        from core.fit.models import skipped_lines
        from core.gguf_load.fit import local_gguf_files
        from tui.render.fit_table import table_row

        picks: list[FitPick] = []
        skipped: list[str] = []
        try:
            catalog = catalog or self._deps.build_catalog()
            files = local_gguf_files(catalog.models_dirs, catalog.hf_cache_dir) if gguf else []
            # A folder of GGUF files the catalog skipped has its rows below, as in `fit`.
            folders = {str(f.path.parent) for f in files}
            skipped.extend(
                line
                for s, line in zip(catalog.skipped, skipped_lines(catalog), strict=True)
                if s.location not in folders
            )
            models = self._deps.fit_models(catalog)
            posted = False
            last = time.perf_counter()
            for entry, model in models:
                if self._stop.is_set():
                    return
                if isinstance(model, str):
                    skipped.append(model)
                else:
                    rows = model_rows(model, QUANTIZATION_CHOICES, question)
                    picks.extend(
                        FitPick(entry, row, table_row(row) if row.unavailable is None else ())
                        for row in rows
                    )
                now = time.perf_counter()
                if picks and (not posted or now - last >= BATCH_S):
                    self._post(picks, skipped, False)
                    picks, skipped, posted, last = [], [], True, now
            if gguf is not None and files and not self._stop.is_set():
                self._gguf_rows(files, gguf)
        except Exception as exc:  # a broken catalog must never take the app down
            skipped.append(f"cannot list models: {type(exc).__name__}: {exc}")
        self._post(picks, skipped, True)

    def _gguf_rows(self, files: list[GgufFile], ask: GgufAsk) -> None:
        """`fit`'s GGUF rows (`core.gguf_load.fit`): each file's header read and answered,
        ranked as `fit` ranks them."""
        from core.gguf_load.fit import local_rows, rank_gguf_rows
        from tui.render.gguf_fit_table import gguf_cells

        rows = rank_gguf_rows(local_rows(files, ask))
        found = tuple(GgufPick(row, gguf_cells(row)) for row in rows)
        with contextlib.suppress(Exception):  # the app quit meanwhile: nobody to tell
            self._screen.post_message(GgufRowsRead(found))
