"""The kernel's TTM limit on GTT (`/sys/module/ttm/parameters/pages_limit`): the most
system memory the GPU drivers may map, in pages. Its default is half of RAM; on an APU
(gfx1151) it caps the pool HIP allocates from, whatever `mem_info_gtt_total` says."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from core.numbers import decimal_to_int
from core.regular_file import read_small_text
from core.units import U64_MAX


@dataclass(frozen=True)
class TtmLimit:
    """`pages_limit` as read: pages, the page size, and the file it came from."""

    pages: int
    page_size: int
    path: Path

    @property
    def bytes(self) -> int:
        """pages x page size (at most 2^64-1)."""
        return min(self.pages * self.page_size, U64_MAX)


def page_size() -> int:
    """This machine's page size (`sysconf(SC_PAGE_SIZE)`), 4096 where it is not told."""
    try:
        size = os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 4096
    return size if size > 0 else 4096


def read_ttm_limit(root: Path = Path("/sys"), size: int | None = None) -> TtmLimit | None:
    """TTM's pages limit under `root`, or None (no ttm module, unreadable, not a count,
    or 0: the kernel then takes its default and the file does not say it)."""
    path = root / "module" / "ttm" / "parameters" / "pages_limit"
    try:
        text = read_small_text(path, 64).strip()  # a regular file: a FIFO never hangs
    except OSError:
        return None
    pages = decimal_to_int(text) if text.isascii() and text.isdigit() else None
    if not pages or pages > U64_MAX:
        return None
    return TtmLimit(pages, size or page_size(), path)
