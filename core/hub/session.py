"""One process's use of huggingface_hub: when it may go online, and what its errors mean.

huggingface_hub reads `HF_HUB_OFFLINE` once, at import, and keeps one shared HTTP
client; every Hub read of vramscope (a model, a listing, a search, fit --hub's many
at once) goes online through `online` and reads a failure through `unreachable`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from core.display_text import clean_text
from core.hub.fetch import HubTimeout
from core.hub.own_host import guard_client

_TRUE = {"1", "ON", "YES", "TRUE"}


def hub_offline_reason(env: Mapping[str, str] | None = None) -> str | None:
    """`HF_HUB_OFFLINE=1` (or TRANSFORMERS_OFFLINE) as the hub reads it, else None."""
    env = os.environ if env is None else env
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if env.get(name, "").upper() in _TRUE:
            return f"{name}={env[name]}"
    return None


@contextlib.contextmanager
def online(timeout_s: float) -> Iterator[None]:
    """Lift the hub's import-time offline switch and set its download timeout, then restore.

    Reads may overlap (several repos read at once from worker threads): the first in
    saves and sets, the last out restores, so one read ending never turns the hub
    offline under another.
    """
    from huggingface_hub import constants
    from huggingface_hub.utils.tqdm import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    with _ONLINE_LOCK:
        if not _ONLINE:
            guard_client()  # before any request: it replaces the shared client
            # Its retry warnings would break the one-line errors: the outcome is reported.
            hub_log = logging.getLogger("huggingface_hub")
            _ONLINE["saved"] = (
                constants.HF_HUB_OFFLINE,
                constants.HF_HUB_DOWNLOAD_TIMEOUT,
                hub_log.level,
                are_progress_bars_disabled(),
            )
            hub_log.setLevel(logging.ERROR)
            constants.HF_HUB_OFFLINE = False
            disable_progress_bars()
        _ONLINE["count"] = _ONLINE.get("count", 0) + 1
        constants.HF_HUB_DOWNLOAD_TIMEOUT = int(max(1.0, timeout_s))
    try:
        yield
    finally:
        with _ONLINE_LOCK:
            _ONLINE["count"] -= 1
            if _ONLINE["count"] == 0:
                offline, timeout, level, bars_off = _ONLINE.pop("saved")
                _ONLINE.clear()
                constants.HF_HUB_OFFLINE, constants.HF_HUB_DOWNLOAD_TIMEOUT = offline, timeout
                logging.getLogger("huggingface_hub").setLevel(level)
                if not bars_off:
                    enable_progress_bars()


_ONLINE_LOCK = threading.Lock()
_ONLINE: dict[str, Any] = {}
"""The reads inside `online` now (`count`) and what the first one in saved."""


def timed_out(exc: BaseException) -> bool:
    """True when `exc` is a request's or the read's deadline passing."""
    import httpx2

    return isinstance(exc, httpx2.TimeoutException | HubTimeout)


def unreachable(exc: BaseException) -> str | None:
    """A short reason when `exc` means the Hub could not be reached, else None."""
    import httpx2
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

    if timed_out(exc):
        return "timed out"
    if isinstance(exc, httpx2.TransportError | OfflineModeIsEnabled | ConnectionError):
        return clean_text(str(exc) or type(exc).__name__)[:120]
    if isinstance(exc, LocalEntryNotFoundError):
        return "connection failed"
    return None
