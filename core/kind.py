"""The one base of vramscope's typed kinds (`Kind`) and its one parser (`Kind.named`).

A kind is a plain `Enum`: a member is never equal to its word (the torch engine's member
compared with the text "torch" is False, and `tests/test_typed_kinds.py` finds such a
compare in the source), so text becomes a member once, where it enters (a flag, a JSON
record), through `named`,
and everything after compares members by identity. The word is the member's value:
what the CLI, the JSON and the history write (`.value` where written; `str()` and
f-strings print the word too, so printed text reads as it always did).
"""

from __future__ import annotations

import enum
import re
from typing import Self

from core.display_text import clean_text
from core.errors import UsageError


class KindError(UsageError, ValueError):
    """A word that names none of a kind's members; the message lists the choices. A
    ValueError too, so a record reader that skips bad values skips it."""


class Kind(enum.Enum):
    """A typed kind whose value is its word."""

    @classmethod
    def named(cls, text: object, what: str | None = None) -> Self:
        """The member `text` names (a member passes as it is); `KindError` naming
        `what` (the flag or field; the kind's name in words by default) and the choices."""
        if isinstance(text, cls):
            return text
        for member in cls:
            if member.value == text:
                return member
        shown = clean_text(text if isinstance(text, str) else repr(text))[:60]
        choices = ", ".join(str(m.value) for m in cls)
        raise KindError(what or _words(cls.__name__), f"'{shown}' is not one of {choices}")

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


def _words(name: str) -> str:
    """`KvCacheMode` -> `kv cache mode`."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower()
