"""`fit --hub` and the Fits view's Hub scope: the listing's bounds, then exact rows.

Every listed repo first gets a bound row (`≈`: the stored weights the listing's
parameter counts per dtype imply, no file read). The shortlist is then read through
`core.hub.remote.read_hub_model` (the read `inspect REPO` makes) on at most
`WORKERS` daemon threads, each repo given `timeout_s` in all; each read repo becomes
a catalog entry of the Hub store and its rows are `core.answer.fit.model_rows`, the
answer inspect gives. A repo whose listed commit is already in the store is answered
from it without a request. Rows are handed to `on_rows` as each repo ends.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.answer.fit import FitRow, model_rows
from core.answer.quantization import Quantization
from core.answer.question import Question
from core.answer.verdict import Scope, Verdict
from core.catalog.entry import CatalogEntry
from core.display_text import clean_text
from core.errors import (
    HubClientClosedError,
    HubTimedOutError,
    HubUnreachableError,
    VramscopeError,
)
from core.hub.listing import ListedModel, Listing
from core.hub.remote import HubOptions, read_hub_model
from core.hub.session import hub_offline_reason, online
from core.hub.store import lookup
from core.paths import hub_store_dir

WORKERS = 8
"""Repos read at once (each of them reads its shards' headers on up to 8 more)."""
READ_TRIES = 3
"""A read that lost its connection (not one that timed out) is tried again, within the
repo's deadline: huggingface_hub closes its one shared HTTP client whenever any request
fails to connect (a listing given up on and still retrying, another repo), which
breaks the requests other threads have in flight on it."""


def _transient(exc: BaseException) -> bool:
    """A read whose connection went away under it (not one that timed out)."""
    if isinstance(exc, HubClientClosedError):
        return True
    return isinstance(exc, HubUnreachableError) and not isinstance(exc, HubTimedOutError)


@dataclass(frozen=True)
class HubFitRow:
    """One listed repo at one quantization: exact (`row`) or the listing's bound."""

    listed: ListedModel
    quantization: Quantization = Quantization.STORED
    row: FitRow | None = None
    """The answer inspect gives (None: a bound row, `problem` may say why)."""
    entry: CatalogEntry | None = None
    """The Hub store's entry (Enter in the Fits view opens it)."""
    problem: str | None = None
    from_store: bool = False

    @property
    def exact(self) -> bool:
        """True when the row is the answer (not the listing's bound)."""
        return self.row is not None and self.row.unavailable is None

    @property
    def bound_weights_bytes(self) -> int | None:
        """The listing's stored weights, for a stored-quantization bound row."""
        return self.listed.weight_bytes if self.quantization is Quantization.STORED else None

    def bound_verdict(self, available_bytes: int) -> Verdict:
        """DOES NOT FIT when the weights alone are over the memory; no verdict otherwise
        (the rest of the estimate is unknown until the repo is read)."""
        weights = self.bound_weights_bytes
        if weights is not None and weights > available_bytes:
            return Verdict(Scope.BOUND, False, weights - available_bytes)
        return Verdict(Scope.BOUND, None)

    def bound_fits(self, available_bytes: int) -> bool | None:
        """False when the weights alone are over the memory; None otherwise (unknown)."""
        return self.bound_verdict(available_bytes).fits

    @property
    def trained_tokens(self) -> int | None:
        """The trained context: the answer's, else the listing's config's."""
        found = self.row.found if self.row is not None else None
        trained = found.trained if found is not None else None
        return trained.tokens if trained is not None else self.listed.trained_context

    def json(self, available_bytes: int) -> dict[str, Any]:
        """A row of `fit --hub --json`: fit's row keys, then the listing's."""
        out: dict[str, Any]
        if self.row is not None:
            out = self.row.json()
        else:
            out = {
                "model": self.listed.repo_id,
                "quantization": self.quantization.word,
                "weights_bytes": None,
                "total_bytes": None,
                "fits": None,
            }
        out.update(
            exact=self.exact,
            bound_weights_bytes=self.bound_weights_bytes,
            bound_fits=None if self.exact else self.bound_fits(available_bytes),
            trained_context_tokens=self.trained_tokens,
            downloads=self.listed.downloads,
            likes=self.listed.likes,
            updated=self.listed.updated,
            gated=self.listed.gated,
            pipeline_tag=self.listed.pipeline_tag,
            commit=self.listed.commit,
            from_store=self.from_store,
            problem=self.problem,
        )
        return out


def bound_rows(listing: Listing) -> list[HubFitRow]:
    """One `≈` row per listed repo (stored quantization), before any read."""
    return [HubFitRow(m) for m in listing.models]


@dataclass
class ReadTally:
    """What the reads did: read from the Hub, answered from the store, failed."""

    read: int = 0
    from_store: int = 0
    failed: int = 0
    bytes_fetched: int = 0
    problems: list[str] = field(default_factory=list)


_Outcome = tuple[list[HubFitRow], int, bool]
OnRows = Callable[[ListedModel, list[HubFitRow], ReadTally], None]


def _token(env: Mapping[str, str]) -> str | None:
    return env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or None


def _read_one(
    listed: ListedModel,
    question: Question,
    quantizations: Sequence[Quantization],
    timeout_s: float,
    env: Mapping[str, str],
) -> _Outcome:
    """One repo's rows, the bytes fetched and whether the store answered."""
    from core.catalog.resolve import hub_read_entry
    from core.fit.models import FitReader

    root = hub_store_dir(env)
    stored = lookup(root, listed.repo_id, listed.commit) if listed.commit else None
    if stored is not None:
        entry = hub_read_entry(listed.repo_id, stored.commit, stored.path)
        fetched, from_store = 0, True
    else:
        if listed.gated and _token(env) is None and hub_offline_reason(env) is None:
            problem = "gated: listed with the bound; set HF_TOKEN (with access) to read it"
            return [HubFitRow(listed, problem=problem)], 0, False
        read = read_hub_model(listed.repo_id, HubOptions(timeout_s=timeout_s), env)
        entry = hub_read_entry(read.repo_id, read.commit, read.path)
        fetched, from_store = read.bytes_fetched, read.headers_read == 0
    model = FitReader(None).read(entry, what_ifs_too=quantizations != (Quantization.STORED,))
    rows = model_rows(model, quantizations, question)
    # A what-if that does not apply (a 4-bit repo's 8-bit) is no row, as in `fit`'s table.
    usable = [r for r in rows if r.unavailable is None]
    if not usable:
        why = rows[0].unavailable if rows else "no answer"
        return [HubFitRow(listed, problem=f"read, but no answer: {why}")], fetched, from_store
    found = [HubFitRow(listed, r.quantization, r, entry, None, from_store) for r in usable]
    return found, fetched, from_store


def read_exact(
    listing: Listing,
    question: Question,
    quantizations: Sequence[Quantization],
    on_rows: OnRows,
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    stop: threading.Event | None = None,
    workers: int = WORKERS,
) -> ReadTally:
    """Read every listed repo (bounded concurrency, `timeout_s` each) and hand each
    one's rows to `on_rows` on the caller's thread as it ends. A repo that fails
    keeps its bound row with the one-line reason."""
    env = os.environ if env is None else env
    tally = ReadTally()
    results: queue.Queue[tuple[int, _Outcome | str]] = queue.Queue()
    models = list(listing.models)
    pending = deque(range(len(models)))
    running: dict[int, float] = {}
    host = listing.endpoint.split("://", 1)[-1]

    def work(i: int) -> None:
        for attempt in range(READ_TRIES):
            try:
                outcome = _read_one(models[i], question, quantizations, timeout_s, env)
            except VramscopeError as exc:
                text = str(exc)
                if attempt + 1 < READ_TRIES and _transient(exc):
                    time.sleep(0.05 * (attempt + 1))
                    continue
                results.put((i, clean_text(text)[:300]))
                return
            except Exception as exc:  # never a traceback: the row keeps its bound
                results.put((i, clean_text(f"{type(exc).__name__}: {exc}")[:300]))
                return
            results.put((i, outcome))
            return

    def fail(i: int, problem: str) -> None:
        tally.failed += 1
        tally.problems.append(problem)
        on_rows(models[i], [HubFitRow(models[i], problem=problem)], tally)

    with online(timeout_s):
        while pending or running:
            if stop is not None and stop.is_set():
                break
            while pending and len(running) < workers:
                i = pending.popleft()
                running[i] = time.monotonic()
                threading.Thread(target=work, args=(i,), daemon=True, name="hub read").start()
            wait = min(running.values()) + timeout_s - time.monotonic()
            try:
                i, result = results.get(timeout=max(0.01, min(wait, 0.25)))
            except queue.Empty:
                now = time.monotonic()
                for late in [k for k, t in running.items() if now - t > timeout_s]:
                    del running[late]
                    fail(late, f"the Hub at {host} did not answer within {timeout_s:g} s")
                continue
            if running.pop(i, None) is None:
                continue  # already given up on
            if isinstance(result, str):
                fail(i, result)
                continue
            rows, fetched, from_store = result
            gated_unread = any(r.problem for r in rows)
            if gated_unread:
                tally.failed += 1
                tally.problems.append(f"{models[i].repo_id}: {rows[0].problem}")
            elif from_store:
                tally.from_store += 1
            else:
                tally.read += 1
            tally.bytes_fetched += fetched
            on_rows(models[i], rows, tally)
    return tally
