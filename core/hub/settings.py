"""The Hub settings the environment holds, checked before huggingface_hub is imported.

huggingface_hub parses HF_ENDPOINT, HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT at
import time and raises a bare ValueError (a traceback) for a value it cannot parse;
here the variable is named instead, as a settings error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from core.display_text import clean_text
from core.errors import UsageError

DEFAULT_ENDPOINT = "https://huggingface.co"
_WHOLE_SECONDS = ("HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT")


def _shown(value: str) -> str:
    return repr(clean_text(value)[:80])


def endpoint_problem(value: str) -> str | None:
    """Why `value` cannot be a Hub endpoint (`http(s)://host[:port][/path]`), else None."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        return f"not a URL ({clean_text(str(exc))[:60]})"
    if parts.scheme not in ("http", "https"):
        return "not an http:// or https:// URL"
    if not parts.hostname:
        return "names no host"
    return None


def settings_error(env: Mapping[str, str] | None = None) -> UsageError | None:
    """The first Hub setting in `env` (default os.environ) huggingface_hub cannot use."""
    env = os.environ if env is None else env
    endpoint = env.get("HF_ENDPOINT")
    if endpoint:
        why = endpoint_problem(endpoint)
        if why is not None:
            return UsageError(f"HF_ENDPOINT={_shown(endpoint)}", why)
    for name in _WHOLE_SECONDS:
        value = env.get(name)
        if value is None:
            continue
        try:
            int(value)
        except ValueError:
            return UsageError(f"{name}={_shown(value)}", "not a whole number of seconds")
    return None


def check_settings(env: Mapping[str, str] | None = None) -> None:
    """Raise the settings error of `env`, if any (UsageError, one line, exit 2)."""
    error = settings_error(env)
    if error is not None:
        raise error


def hub_endpoint(env: Mapping[str, str] | None = None) -> str:
    """`HF_ENDPOINT` (a mirror, a self-hosted hub), else huggingface.co (UsageError if
    it is not a URL)."""
    env = os.environ if env is None else env
    value = env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    why = endpoint_problem(value)
    if why is not None:
        raise UsageError(f"HF_ENDPOINT={_shown(value)}", why)
    return value.rstrip("/")
