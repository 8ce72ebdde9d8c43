"""`fit --hub`: one `list_models` call, its expansions read as untrusted, and kept.

The listing names each repo with what the Hub already knows of it (safetensors
parameter counts per dtype, config, downloads, likes, last modified, gated,
pipeline tag, commit): enough for a bound on the weights without reading a file.
`list_models` takes no timeout, so it runs on a daemon thread given one deadline;
the rows read before a stall, a 5xx or a malformed entry are kept, with one line.

Listings are kept under `$XDG_CACHE_HOME/vramscope/hub-listings/` by query and
endpoint (one JSON file each, written atomically under the store's lock,
`hub-listings.lock` beside the folder): a query asked again within
`FRESH_S` is answered from there, and so is any query with the Hub off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from core.atomic_write import atomic_write, locked
from core.display_text import clean_text
from core.errors import (
    HubClientClosedError,
    HubError,
    HubOfflineError,
    HubTimedOutError,
    HubUnreachableError,
)
from core.hub import DEFAULT_TIMEOUT_S
from core.hub.fetch import client_closed
from core.hub.own_host import OffHostPage, pages_at
from core.hub.session import hub_offline_reason, online, timed_out, unreachable
from core.hub.settings import hub_endpoint
from core.hub.store import is_repo_id
from core.model.safetensors_header import DTYPE_ITEMSIZE
from core.paths import cache_dir
from core.regular_file import read_regular
from core.units import sat_mul

MAX_LIMIT = 1000
"""The most repos one listing reads (pages of the Hub's size until then)."""
FRESH_S = 3600.0
"""A listing this young answers the same query again without the network."""
LISTING_FILE_CAP = 16 * 1024 * 1024
EXPAND = [
    "safetensors",
    "config",
    "downloads",
    "likes",
    "lastModified",
    "gated",
    "pipeline_tag",
    "library_name",
    "sha",
]
_FIELD_CAP = 200


class HubSort(Enum):
    """`--sort` orders the listing asks the Hub for."""

    DOWNLOADS = "downloads"
    LIKES = "likes"
    UPDATED = "updated"

    @property
    def hub_word(self) -> str:
        """The word `list_models(sort=...)` takes."""
        return "last_modified" if self is HubSort.UPDATED else self.value


class HubLibrary(Enum):
    """`--library`: the Hub's library filter."""

    MLX = "mlx"
    TRANSFORMERS = "transformers"
    GGUF = "gguf"
    """llama.cpp's files: each quant file a row of llama.cpp's load (#40)."""


@dataclass(frozen=True)
class ListingQuery:
    """What was asked of the Hub's model listing."""

    search: str = ""
    author: str | None = None
    library: HubLibrary | None = None
    sort: HubSort = HubSort.DOWNLOADS
    limit: int = 50

    def key(self, endpoint: str) -> str:
        """The store's file name for this query at this endpoint."""
        text = json.dumps(
            [endpoint, self.search, self.author, self.library and self.library.value,
             self.sort.value, self.limit]
        )  # fmt: skip
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def words(self) -> str:
        """`search 'qwen', author mlx-community, library mlx, by downloads, 50 at most`."""
        parts = [f"search {self.search!r}"] if self.search else []
        if self.author:
            parts.append(f"author {self.author}")
        if self.library is not None:
            parts.append(f"library {self.library.value}")
        parts.append(f"by {self.sort.value}, {self.limit} at most")
        return clean_text(", ".join(parts))


@dataclass(frozen=True)
class ListedModel:
    """One repo as the listing tells it (every field checked; None where not said)."""

    repo_id: str
    commit: str | None = None
    downloads: int | None = None
    likes: int | None = None
    updated: str | None = None
    """Last modified, `YYYY-MM-DD`."""
    gated: bool = False
    pipeline_tag: str | None = None
    library: str | None = None
    params_by_dtype: tuple[tuple[str, int], ...] = ()
    """The Hub's safetensors parameter counts per dtype (elements as stored)."""
    trained_context: int | None = None
    """`max_position_embeddings` where the listing's config says it."""

    @property
    def weight_bytes(self) -> int | None:
        """The stored weights' bytes the counts imply (None: no counts, or a dtype
        vramscope does not know): the bound a row shows before the headers."""
        if not self.params_by_dtype:
            return None
        total = 0
        for dtype, count in self.params_by_dtype:
            size = DTYPE_ITEMSIZE.get(dtype)
            if size is None:
                return None
            total += sat_mul(size, count)
        return total

    @property
    def params(self) -> int | None:
        """Stored elements, all dtypes together."""
        return sum(c for _, c in self.params_by_dtype) if self.params_by_dtype else None

    def json(self) -> dict[str, Any]:
        """The listing store's (and `fit --hub --json`'s) record of the repo."""
        out = asdict(self)
        out["params_by_dtype"] = dict(self.params_by_dtype)
        return out


@dataclass(frozen=True)
class Listing:
    """A listing: its repos, when it was taken, and what cut it short."""

    query: ListingQuery
    endpoint: str
    models: tuple[ListedModel, ...]
    listed_at: float
    """Seconds since the epoch when the Hub answered."""
    problem: str | None = None
    """One line: why the listing stopped early (rows before it kept), or skipped entries."""
    note: str | None = None
    """One line when the listing came from the store (offline, unreachable, fresh)."""
    from_store: bool = False

    @property
    def date(self) -> str:
        """When it was listed, UTC, to the minute."""
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.listed_at))


Progress = Callable[[str], None]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(value: Any, cap: int = _FIELD_CAP) -> str | None:
    return clean_text(value)[:cap] if isinstance(value, str) and value else None


def _date(value: Any) -> str | None:
    if hasattr(value, "strftime"):
        return str(value.strftime("%Y-%m-%d"))
    text = _text(value, 40)
    return text[:10] if text and len(text) >= 10 and text[4] == "-" else None


def _trained(config: Any) -> int | None:
    if not isinstance(config, dict):
        return None
    for where in (config, config.get("text_config")):
        if isinstance(where, dict):
            found = _int(where.get("max_position_embeddings"))
            if found:
                return found
    return None


def listed_model(info: Any) -> ListedModel | str:
    """A `ModelInfo` (or a stored record's dict) as a `ListedModel`, or why not."""
    get = info.get if isinstance(info, dict) else (lambda k, d=None: getattr(info, k, d))
    repo_id = get("id") or get("repo_id")
    if not isinstance(repo_id, str) or not is_repo_id(repo_id):
        return f"an entry without a usable repo id ({clean_text(str(repo_id))[:60]!r})"
    counts: list[tuple[str, int]] = []
    st = get("safetensors")
    params = st.get("parameters") if isinstance(st, dict) else getattr(st, "parameters", None)
    if isinstance(params, dict):
        for dtype, count in list(params.items())[:32]:
            if isinstance(dtype, str) and _int(count) is not None:
                counts.append((clean_text(dtype)[:16], count))
    stored_counts = get("params_by_dtype")
    if isinstance(stored_counts, dict):
        counts = [(str(k)[:16], v) for k, v in stored_counts.items() if _int(v) is not None]
    commit = get("sha") or get("commit")
    gated = get("gated")
    return ListedModel(
        repo_id=repo_id,
        commit=commit if isinstance(commit, str) and len(commit) == 40 else None,
        downloads=_int(get("downloads")),
        likes=_int(get("likes")),
        updated=_date(get("last_modified") or get("lastModified") or get("updated")),
        gated=bool(gated) and gated != "false",
        pipeline_tag=_text(get("pipeline_tag"), 60),
        library=_text(get("library_name") or get("library"), 40),
        params_by_dtype=tuple(counts),
        trained_context=_trained(get("config")) or _int(get("trained_context")),
    )


def listings_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/vramscope/hub-listings`."""
    return cache_dir(env) / "hub-listings"


def load_listing(query: ListingQuery, endpoint: str, env: Mapping[str, str]) -> Listing | None:
    """The stored listing for this query and endpoint, or None (missing or damaged)."""
    path = listings_dir(env) / f"{query.key(endpoint)}.json"
    try:
        data = json.loads(read_regular(path, LISTING_FILE_CAP)[:LISTING_FILE_CAP])
        at = float(data["listed_at"])
        models = [listed_model(m) for m in data["models"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    kept = tuple(m for m in models if isinstance(m, ListedModel))
    problem = data.get("problem") if isinstance(data.get("problem"), str) else None
    return Listing(query, endpoint, kept, at, _text(problem, 300), from_store=True)


def save_listing(listing: Listing, env: Mapping[str, str]) -> None:
    """Keep a listing (a full one, or one cut short: it is what the Hub said)."""
    data = {
        "endpoint": listing.endpoint,
        "query": listing.query.words(),
        "listed_at": listing.listed_at,
        "problem": listing.problem,
        "models": [m.json() for m in listing.models],
    }
    path = listings_dir(env) / f"{listing.query.key(listing.endpoint)}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The store's one writer at a time (`hub-listings.lock` beside the folder, which
        # holds only the listings): each listing is written whole, never merged.
        with locked(listings_dir(env)):
            atomic_write(path, json.dumps(data).encode())
    except OSError:
        pass  # a read-only cache costs the next run a listing, nothing else


def list_hub(
    query: ListingQuery,
    *,
    refresh: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    now: float | None = None,
) -> Listing:
    """The listing for `query`: the store's when fresh (or the Hub is off or
    unreachable), else the Hub's, kept. Raises HubError (one line) when neither answers."""
    env = os.environ if env is None else env
    endpoint = hub_endpoint(env)
    now = time.time() if now is None else now
    stored = load_listing(query, endpoint, env)
    off = hub_offline_reason(env)
    if off is not None:
        if stored is None:
            raise HubOfflineError(
                "--hub", f"the Hub is off ({off}) and this query was never listed"
            )
        return _from_store(stored, f"the Hub is off ({off})")
    if stored is not None and not refresh and 0 <= now - stored.listed_at < FRESH_S:
        return _from_store(stored, "listed within the hour (--refresh lists again)")
    try:
        try:
            listing = _list_online(query, endpoint, timeout_s, env, progress)
        except HubClientClosedError:
            # huggingface_hub closed its shared client under this call (another request
            # failed to connect): once more, with the client it makes anew.
            listing = _list_online(query, endpoint, timeout_s, env, progress)
    except HubUnreachableError as exc:
        if stored is None:
            raise
        return _from_store(stored, f"the Hub is unreachable ({exc.problem})")
    save_listing(listing, env)
    return listing


def _from_store(stored: Listing, why: str) -> Listing:
    note = f"{why}: the listing of {stored.date}, {len(stored.models)} repos"
    return Listing(
        stored.query, stored.endpoint, stored.models, stored.listed_at, stored.problem, note, True
    )


def _list_online(
    query: ListingQuery,
    endpoint: str,
    timeout_s: float,
    env: Mapping[str, str],
    progress: Progress | None,
) -> Listing:
    limit = max(1, min(query.limit, MAX_LIMIT))
    rows: list[ListedModel] = []
    skipped: list[str] = []
    box: dict[str, Any] = {}
    token = env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or False

    def work() -> None:
        from huggingface_hub import HfApi

        try:
            api = HfApi(endpoint=endpoint, token=token)
            found = api.list_models(
                search=query.search or None,
                author=query.author or None,
                filter=query.library.value if query.library else None,
                sort=query.sort.hub_word,  # type: ignore[arg-type]
                limit=limit,
                expand=EXPAND,  # type: ignore[arg-type]
            )
            with pages_at(endpoint):  # the token never follows a Link to another host
                for info in found:
                    item = listed_model(info)
                    if isinstance(item, str):
                        skipped.append(item)
                    else:
                        rows.append(item)
                    if len(rows) >= limit:
                        break
        except Exception as exc:  # reported in the caller's thread
            box["error"] = exc

    started = time.monotonic()
    with online(timeout_s):
        thread = threading.Thread(target=work, daemon=True, name="vramscope hub listing")
        thread.start()
        thread.join(timeout_s)
    kept = tuple(dict((m.repo_id, m) for m in list(rows)).values())
    problem: str | None = None
    kind: type[HubError] = HubError  # what a listing with no row raises
    host = endpoint.split("://", 1)[-1]
    if thread.is_alive():
        # The abandoned call may retry: keep its warnings quiet for good.
        logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
        problem = f"the Hub at {host} did not finish the listing within {timeout_s:g} s"
        kind = HubTimedOutError
    elif "error" in box:
        exc = box["error"]
        reason = unreachable(exc)
        if reason is not None and not kept:
            lost = HubTimedOutError if timed_out(exc) else HubUnreachableError
            raise lost("--hub", f"the Hub at {host} is unreachable ({reason})")
        problem = f"the listing from {host} stopped: {_why(exc)}"
        kind = HubClientClosedError if client_closed(exc) else HubError
    if skipped:
        extra = f"{len(skipped)} listing entr{'y' if len(skipped) == 1 else 'ies'} skipped: "
        problem = (problem + "; " if problem else "") + extra + skipped[0]
    if problem is not None and not kept:
        raise kind("--hub", problem)
    if progress is not None:
        progress(
            f"listed {len(kept)} repos from {host} in {time.monotonic() - started:.1f} s "
            f"({query.words()})"
        )
    return Listing(query, endpoint, kept, time.time(), problem)


def _why(exc: BaseException) -> str:
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, OffHostPage):
        return f"{exc}, not asked for (the token goes only to the endpoint's host)"
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code}"
    reason = unreachable(exc)
    if reason is not None:
        return reason
    text = str(exc).splitlines()[0] if str(exc) else ""
    kind = "a malformed entry " if isinstance(exc, TypeError | ValueError | KeyError) else ""
    return clean_text(f"{kind}({type(exc).__name__}: {text})")[:160]
