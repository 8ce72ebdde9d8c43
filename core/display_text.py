"""Text from untrusted places (model folders, file names, argv) made safe to show.

Folder names may hold bytes that are not UTF-8 (Python keeps them as lone
surrogates) and config strings may hold escape sequences that would drive a
terminal. `clean_text` is for anything printed to a terminal or drawn by the
TUI; `json_safe` for anything serialised as JSON, which must be valid UTF-8.
"""

from __future__ import annotations

import re
from typing import Any

# C0 and C1 controls, DEL, and the bidirectional overrides that can reorder a line.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_undecodable(text: str) -> str:
    """Write bytes that were not valid UTF-8 (surrogate escapes) as `\\xNN`."""
    if not _SURROGATE.search(text):
        return text
    raw = text.encode("utf-8", "surrogateescape") if _only_escapes(text) else None
    if raw is not None:
        return raw.decode("utf-8", "backslashreplace")
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _only_escapes(text: str) -> bool:
    """True when every surrogate is a `surrogateescape` byte (U+DC80..U+DCFF)."""
    return all("\udc80" <= ch <= "\udcff" for ch in _SURROGATE.findall(text))


def clean_text(text: str) -> str:
    """Text fit for a terminal line: undecodable bytes escaped, control characters removed."""
    text = escape_undecodable(text)
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    return text


def json_safe(value: Any) -> Any:
    """A copy of a JSON-ready value whose strings (and keys) all encode as UTF-8."""
    if isinstance(value, str):
        return escape_undecodable(value)
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def shorten(text: str, limit: int = 64) -> str:
    """At most `limit` characters, with `...` where it was cut (a 5000-digit value)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


ECHO_LIMIT = 200
"""The longest run of a user's value an error line repeats (a 100,000-character MODEL
would otherwise be a 100 KB line)."""
_LONG_RUN = re.compile(rf"\S{{{ECHO_LIMIT + 1},}}")


def cap_echoes(text: str, limit: int = ECHO_LIMIT) -> str:
    """Every run of non-space characters longer than `limit` cut, with an ellipsis and
    its length: `aaaa… (100,000 characters)`."""
    if len(text) <= limit:
        return text
    return _LONG_RUN.sub(
        lambda m: f"{m.group()[: limit - 1]}… ({len(m.group()):,} characters)", text
    )
