"""Every byte a Hub read asks for, in one place: one deadline per read, capped bodies.

httpx bounds each socket read, so a server sending a byte a second never trips its
timeout, and huggingface_hub reads a body whole whatever its size (a server that
ignores Range sends the full shard). Here each request goes through huggingface_hub's
own session and headers (token, user agent, its offline switch), streams the raw
bytes, stops at a cap whatever the server says, and checks the read's one deadline
between chunks. The work runs in daemon threads the caller waits on interruptibly:
Ctrl-C ends a read blocked on a stalled socket, and an abandoned thread can never
keep the process alive.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_GRACE_S = 0.5
"""How much longer the caller waits than the deadline: the worker's own, clearer
timeout normally wins; this only bounds a worker stuck where no check runs."""
_ERROR_BODY_CAP = 64 * 1024
_SLICE_S = 0.1


class HubTimeout(Exception):
    """The read's deadline passed (the caller names the host and the timeout)."""


@dataclass(frozen=True)
class Deadline:
    """When a whole Hub read must be done, and the `--hub-timeout` it came from."""

    end: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def left(self) -> float:
        """Seconds left; HubTimeout once none are."""
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise HubTimeout
        return remaining


def run_bounded(work: Callable[[], T], deadline: Deadline) -> T:
    """`work()` in a daemon thread, waited for until the deadline (plus a grace).

    The wait is interruptible (Ctrl-C raises KeyboardInterrupt here at once), and a
    worker left behind dies with the process. Raises what `work` raised, or HubTimeout.
    """
    box: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)

    def target() -> None:
        _leave_signals_to_the_main_thread()
        try:
            box.put((True, work()))
        except BaseException as exc:  # handed to the waiting thread as it is
            box.put((False, exc))

    threading.Thread(target=target, name="vramscope-hub-read", daemon=True).start()
    ok, value = _wait(box, deadline)
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


def map_bounded(
    fn: Callable[[T], R], items: Iterable[T], workers: int, deadline: Deadline
) -> list[R]:
    """`[fn(x) for x in items]` on up to `workers` daemon threads, in order.

    The first exception ends the wait and is raised; threads still running finish
    on their own deadline checks.
    """
    todo: queue.Queue[tuple[int, T]] = queue.Queue()
    listed = list(items)
    for i, item in enumerate(listed):
        todo.put((i, item))
    done: queue.Queue[tuple[int, bool, Any]] = queue.Queue()

    def worker() -> None:
        _leave_signals_to_the_main_thread()
        while True:
            try:
                i, item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((i, True, fn(item)))
            except BaseException as exc:  # handed to the waiting thread
                done.put((i, False, exc))
                return

    for _ in range(max(1, min(workers, len(listed)))):
        threading.Thread(target=worker, name="vramscope-hub-header", daemon=True).start()
    out: dict[int, R] = {}
    while len(out) < len(listed):
        i, ok, value = _wait(done, deadline)
        if not ok:
            raise value
        out[i] = value
    return [out[i] for i in range(len(listed))]


def _wait(box: queue.Queue[Any], deadline: Deadline) -> Any:
    """The next item, waited for in short slices until the deadline (plus a grace).

    A signal the kernel hands to another thread only sets Python's flag: the main
    thread sees it when its wait returns, so it never waits long at a time.
    """
    end = deadline.end + _GRACE_S
    while True:
        left = end - time.monotonic()
        if left <= 0:
            raise HubTimeout
        try:
            return box.get(timeout=min(left, _SLICE_S))
        except queue.Empty:
            continue


def _leave_signals_to_the_main_thread() -> None:
    """Block Ctrl-C and SIGTERM in a worker, so the kernel delivers them to the main
    thread, whose wait they end at once."""
    with contextlib.suppress(AttributeError, ValueError, OSError):  # no pthread_sigmask
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


@dataclass(frozen=True)
class Body:
    """What a GET brought back: the status, and at most the bytes asked for."""

    status: int
    data: bytes
    total: int | None = None
    """The whole file's size, as the answer says it (`Content-Range: bytes a-b/TOTAL`, or
    the `Content-Length` of a 200 from byte 0); None when it does not."""


def _total_size(status: int, headers: Any) -> int | None:
    if status == 206:
        _, _, total = headers.get("Content-Range", "").rpartition("/")
    elif status == 200:
        total = headers.get("Content-Length", "")
    else:
        return None
    return int(total) if total.isascii() and total.isdigit() else None


def client_closed(exc: BaseException) -> bool:
    """A request that failed because huggingface_hub closed its one shared HTTP client
    under it: it does so whenever any request of the process fails to connect, which
    breaks the requests other threads have in flight (fit --hub's, the explorer's)."""
    text = str(exc)
    return "client has been closed" in text or "Bad file descriptor" in text


def get_capped(
    url: str, deadline: Deadline, cap: int, *, start: int = 0, ranged: bool = True
) -> Body:
    """`_get_capped`, asked once more of a new client when the shared one was closed
    under it (nothing of the answer was kept: the request starts again)."""
    try:
        return _get_capped(url, deadline, cap, start=start, ranged=ranged)
    except Exception as exc:
        if not client_closed(exc):
            raise
        return _get_capped(url, deadline, cap, start=start, ranged=ranged)


def _get_capped(
    url: str, deadline: Deadline, cap: int, *, start: int = 0, ranged: bool = True
) -> Body:
    """Bytes [start, start + cap) of `url` (fewer where the file ends), never more.

    `ranged` asks for just those bytes; a server that ignores Range answers 200 from
    byte 0, and the bytes before `start` are skipped as they stream (still capped by
    `start + cap`). Unranged (an API answer), the body is read up to `cap`. A status that is not 2xx
    raises what huggingface_hub raises for it (GatedRepoError, RepositoryNotFoundError...).
    """
    import httpx2
    from huggingface_hub import get_session, hf_raise_for_status
    from huggingface_hub.utils._headers import build_hf_headers

    headers = build_hf_headers()
    headers["Accept-Encoding"] = "identity"  # caps count the bytes on the wire
    if ranged:
        headers["Range"] = f"bytes={start}-{start + cap - 1}"
    timeout = httpx2.Timeout(deadline.left())
    with get_session().stream("GET", url, headers=headers, timeout=timeout) as response:
        if response.status_code >= 300:
            body = _read(response.iter_raw(), _ERROR_BODY_CAP, deadline)
            copy = httpx2.Response(
                response.status_code,
                headers=response.headers,
                content=body,
                request=response.request,
            )
            hf_raise_for_status(copy)
            raise OSError(f"HTTP {response.status_code}")  # a 3xx left unfollowed
        skip = start
        if response.status_code == 206:
            if not response.headers.get("Content-Range", "").startswith(f"bytes {start}-"):
                raise ValueError(f"answered another range than bytes={start}-")
            skip = 0
        data = _read(response.iter_raw(), skip + cap, deadline)[skip:]
        return Body(response.status_code, data, _total_size(response.status_code, response.headers))


def _read(chunks: Iterator[bytes], cap: int, deadline: Deadline) -> bytes:
    """At most `cap` bytes of a stream, checking the deadline between chunks."""
    got: list[bytes] = []
    size = 0
    for chunk in chunks:
        deadline.left()
        take = chunk[: cap - size]
        got.append(take)
        size += len(take)
        if size >= cap:
            break
    return b"".join(got)
