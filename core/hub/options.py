"""How a Hub read may go, in a module of its own: the commands build it for every
model they resolve (`inspect`, `fit`, `measure`), and a model named by a folder, the HF
cache or a built-in profile is never read from the Hub, so the reader
(`core.hub.remote`, with huggingface_hub's settings, the store and the fetches) is
imported only when one is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.hub import DEFAULT_TIMEOUT_S

Progress = Callable[[str], None]


@dataclass(frozen=True)
class HubOptions:
    """How a Hub read may go: revision, offline switch, timeout, progress lines."""

    revision: str | None = None
    offline: bool = False
    """`--offline`: answer from the store only (HF_HUB_OFFLINE=1 does the same)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    progress: Progress | None = field(default=None, compare=False)
