"""`vramscope models --hub QUERY`: what the Hub's model search says, bounded.

One `HfApi.list_models(search=...)` call with a result cap; `list_models` takes no
timeout, so it runs in a daemon thread that is abandoned after the timeout.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from core.display_text import clean_text
from core.errors import HubError, HubOfflineError, HubTimedOutError, HubUnreachableError
from core.hub import DEFAULT_TIMEOUT_S
from core.hub.own_host import OffHostPage, pages_at
from core.hub.session import hub_offline_reason, online, timed_out, unreachable
from core.hub.settings import hub_endpoint

MAX_RESULTS = 100


@dataclass(frozen=True)
class HubListing:
    """One search result, as far as the listing tells."""

    repo_id: str
    downloads: int | None
    library: str | None
    safetensors: bool | None
    """True where the listing's tags name safetensors, False where they are given and do
    not, None where the listing gave no tags (it did not say)."""
    gated: bool


def search_hub(
    query: str,
    limit: int = 20,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> list[HubListing]:
    """Up to `limit` (at most MAX_RESULTS) models whose id matches `query`.

    A next page at another host than the endpoint's is not asked for: the results
    before it are kept and `warn` gets one line."""
    env = os.environ if env is None else env
    off = hub_offline_reason(env)
    if off is not None:
        raise HubOfflineError("--hub", f"the Hub is off ({off}): searching needs it")
    endpoint = hub_endpoint(env)
    limit = max(1, min(limit, MAX_RESULTS))
    box: dict[str, Any] = {}
    rows: list[Any] = []

    def work() -> None:
        from huggingface_hub import HfApi

        try:
            api = HfApi(endpoint=endpoint)
            with pages_at(endpoint):
                for info in api.list_models(search=query, limit=limit):
                    rows.append(info)
                    if len(rows) >= limit:
                        break
        except Exception as exc:  # reported below, in the caller's thread
            box["error"] = exc

    with online(timeout_s):
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        thread.join(timeout_s)
    if thread.is_alive():
        # The abandoned call goes on retrying: keep its retry warnings quiet for good.
        logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
        raise HubTimedOutError(
            "--hub", f"the Hub at {endpoint} did not answer within {timeout_s:g} s"
        )
    exc = box.get("error")
    if isinstance(exc, OffHostPage):
        if warn is not None:
            warn(f"the search at {endpoint} stopped after {len(rows)} results: {exc}, "
                 "not asked for (the token goes only to the endpoint's host)")  # fmt: skip
    elif exc is not None:
        reason = unreachable(exc)
        kind = HubError if reason is None else HubUnreachableError
        if timed_out(exc):
            kind = HubTimedOutError
        reason = reason or f"{type(exc).__name__}: {clean_text(str(exc))[:120]}"
        raise kind("--hub", f"searching the Hub at {endpoint} failed ({reason})")
    return [_listing(m) for m in rows[:limit]]


def _listing(info: Any) -> HubListing:
    tags = info.tags if isinstance(getattr(info, "tags", None), list) else None
    downloads = info.downloads if isinstance(getattr(info, "downloads", None), int) else None
    library = info.library_name if isinstance(getattr(info, "library_name", None), str) else None
    return HubListing(
        repo_id=clean_text(str(info.id))[:200],
        downloads=downloads,
        library=clean_text(library)[:40] if library else None,
        safetensors=None if not tags else "safetensors" in tags,
        gated=bool(getattr(info, "gated", False)),
    )
