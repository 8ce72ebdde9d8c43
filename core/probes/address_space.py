"""The process's address-space limit: `RLIMIT_AS` (`ulimit -v`), the soft one.

Every mapping counts against it: the heap, each thread's stack (8 MiB by default) and
each of glibc's per-thread malloc arenas (64 MiB reserved), so a program with a few
threads needs far more address space than resident memory.
"""

from __future__ import annotations

import resource


def address_space_limit() -> int | None:
    """The soft limit in bytes; None when there is none (or it cannot be read)."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft < 0 else soft
