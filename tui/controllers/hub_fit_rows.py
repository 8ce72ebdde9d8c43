"""The Fits view's Hub scope: one listing and the shortlist's reads, on a thread worker.

A query box's text (`qwen author:mlx-community library:mlx sort:likes limit:20`) is a
`core.hub.listing.ListingQuery`; the worker lists (`core.hub.listing.list_hub`),
posts every repo's `≈` bound row at once, then each repo's exact rows as
`core.fit.hub.read_exact` hands them over. A new query or closing the view stops the
walk (the reads in flight end on their own deadline, on daemon threads).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from textual.screen import Screen

from core.answer.quantization import Quantization
from core.answer.question import Question
from core.display_text import clean_text
from core.errors import UsageError, VramscopeError
from core.hub import DEFAULT_TIMEOUT_S
from tui.messages import HubRowsRead

QUANTIZATIONS = tuple(Quantization)


def _words(kinds: Any) -> str:
    """`mlx, transformers or gguf`."""
    names = [x.value for x in kinds]
    return f"{', '.join(names[:-1])} or {names[-1]}"


def parse_query(text: str) -> Any:
    """`words author:ORG library:mlx|transformers|gguf sort:downloads|likes|updated limit:N`."""
    from core.hub.listing import MAX_LIMIT, HubLibrary, HubSort, ListingQuery

    words: list[str] = []
    fields: dict[str, str] = {}
    for token in text.split():
        key, sep, value = token.partition(":")
        if sep and key.lower() in ("author", "library", "lib", "sort", "limit"):
            fields[key.lower()] = value
        else:
            words.append(token)
    library = (fields.get("library") or fields.get("lib") or "").lower()
    sort = fields.get("sort", "downloads").lower()
    limit = fields.get("limit", "50")
    if library and library not in {x.value for x in HubLibrary}:
        raise UsageError(
            "Hub query", f"library:{clean_text(library)[:40]} is not {_words(HubLibrary)}"
        )
    if sort not in {x.value for x in HubSort}:
        raise UsageError(
            "Hub query", f"sort:{clean_text(sort)[:40]} is not downloads, likes or updated"
        )
    if not limit.isdigit() or not 1 <= int(limit) <= MAX_LIMIT:
        raise UsageError("Hub query", f"limit:{clean_text(limit)[:20]} is not 1 to {MAX_LIMIT}")
    return ListingQuery(
        search=" ".join(words),
        author=fields.get("author") or None,
        library=HubLibrary(library) if library else None,
        sort=HubSort(sort),
        limit=int(limit),
    )


class HubFitController:
    """Lists and reads for one query at a time; rows come back as `HubRowsRead`."""

    def __init__(self, screen: Screen[Any], timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._screen = screen
        self._stop = threading.Event()
        self.query = 0
        self.timeout_s = timeout_s

    def start(self, text: str, question: Question) -> int:
        """List and read `text` (stopping the last query's walk); returns its number."""
        self._stop.set()
        self._stop = threading.Event()
        self.query += 1
        number, stop = self.query, self._stop
        self._screen.run_worker(
            lambda: self._walk(number, text, question, stop),
            name="hub rows",
            group="hub-rows",
            thread=True,
            exit_on_error=False,
        )
        return number

    def stop(self) -> None:
        """Stop the walk (the view closed)."""
        self._stop.set()

    def _post(self, number: int, rows: list[Any], status: str, done: bool) -> None:
        with contextlib.suppress(Exception):  # the app quit meanwhile: nobody to tell
            self._screen.post_message(HubRowsRead(number, tuple(rows), status, done))

    def _walk(self, number: int, text: str, question: Question, stop: threading.Event) -> None:
        from core.fit.hub import bound_rows, read_exact
        from core.hub.listing import list_hub

        try:
            query = parse_query(text)
            self._post(number, [], f"listing {query.words()}…", False)
            listing = list_hub(query, timeout_s=self.timeout_s)
        except VramscopeError as exc:
            self._post(number, [], str(exc), True)
            return
        except Exception as exc:  # never take the app down
            self._post(number, [], f"listing failed: {type(exc).__name__}: {exc}", True)
            return
        said = " · ".join(s for s in (listing.note, listing.problem) if s)
        head = f"{len(listing.models)} listed" + (f" · {said}" if said else "")
        self._post(number, bound_rows(listing), head + " · reading headers…", False)

        def on_rows(_listed: Any, rows: list[Any], tally: Any) -> None:
            line = (
                f"{head} · {tally.read} read, {tally.from_store} from the store, "
                f"{tally.failed} not read"
            )
            self._post(number, rows, line, False)

        try:
            tally = read_exact(
                listing, question, QUANTIZATIONS, on_rows, timeout_s=self.timeout_s, stop=stop
            )
        except Exception as exc:
            self._post(number, [], f"{head} · reads failed: {type(exc).__name__}: {exc}", True)
            return
        first = f" · {tally.problems[0]}" if tally.problems else ""
        line = (
            f"{head} · {tally.read} read, {tally.from_store} from the store, "
            f"{tally.failed} not read{first}"
        )
        self._post(number, [], line, True)
