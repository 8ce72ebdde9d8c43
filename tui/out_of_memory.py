"""Out of memory, in any command and on any thread: one line naming memory, exit 2.

The main thread's MemoryError (and Python's "can't start new thread", which is what
running out of memory for a thread's stack looks like) reach `tui/cli.py`'s handler.
Elsewhere they would not: a worker thread's MemoryError is printed as a traceback by
`threading.excepthook`, a thread that fails in its bootstrap is "Exception ignored"
(`sys.unraisablehook`) and leaves `Thread.start()` waiting forever, and an event
loop's task is "Task exception was never retrieved". `install_hooks` (threads) and
`loop_exception_handler` (the app's loop) make each of those the same one line and
end the process there: nothing can be trusted to finish once an allocation failed on
another thread (the hang seen was a lock never released).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from core.errors import NotEnoughMemory
from core.probes.address_space import address_space_limit

if TYPE_CHECKING:
    import asyncio

EXIT_OUT_OF_MEMORY = 2


def is_thread_start_failure(exc: BaseException | None) -> bool:
    """Python's "can't start new thread": no memory (or no thread left) for its stack."""
    return isinstance(exc, RuntimeError) and "start new thread" in str(exc)


def is_out_of_memory(exc: BaseException | None) -> bool:
    """A MemoryError or a thread that could not start."""
    return isinstance(exc, MemoryError) or is_thread_start_failure(exc)


def out_of_memory_line(exc: BaseException) -> str:
    """The one line of a command that ran out of memory, whatever it was doing: which
    allocation failed is rarely the cause (any read, any thread may be the last straw)."""
    what = "a thread could not start" if is_thread_start_failure(exc) else "an allocation failed"
    return (
        f"vramscope: error: out of memory: {what} ({type(exc).__name__}); "
        "free memory or raise the limit (ulimit -v) and run it again"
    )


def exit_out_of_memory(exc: BaseException) -> None:
    """Write the line and end the process now (from any thread)."""
    try:
        os.write(2, (out_of_memory_line(exc) + "\n").encode())
    finally:
        os._exit(EXIT_OUT_OF_MEMORY)


def install_hooks() -> None:
    """Route an out-of-memory failure on any thread, in a thread's bootstrap or in an
    event loop's task to `exit_out_of_memory`; anything else goes where it went."""
    if getattr(threading.excepthook, "vramscope_memory_hook", False):
        return  # once per process: `main` may run many times in one (the tests)
    previous_thread = threading.excepthook
    previous_unraisable = sys.unraisablehook

    def thread_hook(args: Any) -> None:
        if is_out_of_memory(args.exc_value):
            exit_out_of_memory(args.exc_value)
        previous_thread(args)

    def unraisable_hook(unraisable: Any) -> None:
        if is_out_of_memory(unraisable.exc_value):
            exit_out_of_memory(unraisable.exc_value)
        previous_unraisable(unraisable)

    thread_hook.vramscope_memory_hook = True  # type: ignore[attr-defined]
    threading.excepthook = thread_hook
    sys.unraisablehook = unraisable_hook


def loop_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """An event loop's handler (the app sets it): a task that ran out of memory ends the
    process with the line; anything else as asyncio reports it."""
    exc = context.get("exception")
    if isinstance(exc, BaseException) and is_out_of_memory(exc):
        exit_out_of_memory(exc)
    loop.default_exception_handler(context)


EXPLORER_ADDRESS_SPACE = 512 * 2**20
"""The least address space (`ulimit -v`) the explorer is started in. Unlimited, a
screenshot maps 416-482 MB at its peak (VmPeak; threads' stacks and malloc arenas).
Limited below that it fails where it happens to run out, run to run: a MemoryError, a
worker whose thread never starts (the explorer then waits forever), a library that
cannot be mapped (blamed on the library), or CPython 3.11 itself crashing (SIGSEGV:
once its 16 preallocated MemoryErrors are all held, creating one runs out of memory
and creates another, until the C stack overflows). No hook runs in those cases, so the
only reliable answer is to refuse before starting."""


def check_room_to_start(what: str, need: int = EXPLORER_ADDRESS_SPACE) -> None:
    """NotEnoughMemory when the process's address space is limited below `need`."""
    limit = address_space_limit()
    if limit is not None and limit < need:
        raise NotEnoughMemory(
            f"out of memory: {what} needs an address space of at least {need >> 20} MiB, "
            f"and this process is limited to {limit >> 20} MiB (ulimit -v {limit >> 10}); "
            f"raise the limit (ulimit -v {need >> 10}) and run it again"
        )
