"""Credentials go only to their host: a listing's pages are asked of the endpoint alone.

huggingface_hub's paging sends the caller's headers, the token among them, to whatever
URL a page's `Link: rel="next"` names. Every Hub request of vramscope goes through
huggingface_hub's one shared client; `guard_client` gives it a request hook that, inside
`pages_at(endpoint)` (a listing's thread), refuses a request to any other scheme, host
or port before a byte is sent: the listing ends there (`OffHostPage`), the rows before
it kept, with one line.

Redirects need no hook: httpx2 drops `Authorization` when a redirect leaves the origin
(the Hub's own file reads are redirected to its CDN, and must be followed), and
tests/core/hub/test_credentials_host.py holds it to that.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from core.display_text import clean_text

_DEFAULT_PORTS = {"http": 80, "https": 443}
_PAGES_AT: ContextVar[tuple[str, str, int | None] | None] = ContextVar(
    "vramscope_pages_at", default=None
)
_GUARDED = threading.Event()
_GUARD_LOCK = threading.Lock()


class OffHostPage(Exception):
    """A listing's next page named another host than the endpoint's: not asked for."""

    def __init__(self, url: str) -> None:
        self.host = clean_text(urlsplit(url).netloc or url)[:80]
        super().__init__(f"the next page is at another host ({self.host})")


def origin(url: str) -> tuple[str, str, int | None]:
    """`(scheme, host, port)` of `url`, the port filled in from the scheme."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


@contextlib.contextmanager
def pages_at(endpoint: str) -> Iterator[None]:
    """Within this (thread's) block, Hub requests go to `endpoint`'s origin only."""
    token = _PAGES_AT.set(origin(endpoint))
    try:
        yield
    finally:
        _PAGES_AT.reset(token)


def _refuse_off_host(request: Any) -> None:
    allowed = _PAGES_AT.get()
    if allowed is not None and origin(str(request.url)) != allowed:
        raise OffHostPage(str(request.url))


def guard_client() -> None:
    """Give huggingface_hub's shared client (and every one it makes anew) the hook.

    Called before a process's first Hub request (`core.hub.session.online`):
    `set_client_factory` closes the client it had.
    """
    if _GUARDED.is_set():
        return
    with _GUARD_LOCK:
        if _GUARDED.is_set():
            return
        from huggingface_hub import set_client_factory
        from huggingface_hub.utils._http import default_client_factory

        def factory() -> Any:
            client = default_client_factory()
            client.event_hooks["request"].append(_refuse_off_host)
            return client

        set_client_factory(factory)
        _GUARDED.set()
