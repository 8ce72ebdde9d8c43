"""The bounded in-flight mechanism of MLX's ROCm backend, for torch.

MLX's ROCm `gpu::eval` counts the bytes each primitive allocates into the
encoder's open batch. A batch is committed when its bytes reach budget/4 (or
it holds `op_cap` ops); the committed batch keeps every buffer its ops touched
alive until its completion event fires; after each commit the host waits on the
oldest committed batch while the committed total exceeds the budget. Budget 0
never waits (and commits every `op_cap` ops).

torch frees a tensor as soon as Python drops it, so this queue is what keeps
transients alive here: each engine op hands its outputs to `op()`, and they are
released only when their batch's event has completed. On a GPU the event is a
real stream event; on the CPU, where ops run synchronously, the engine passes a
`LaggingEvent` that completes only when the host waits on it, i.e. the device
is modelled as running a whole pass behind the host (the worst case the bound
exists for). See docs/measuring.md.

With no queue emulated on the CPU (`block_lag`), the queue models MLX's CPU stream
instead: the host allocates each op's output as it dispatches the op, and the stream's
worker thread frees an op's inputs only once it has run the op. The host may run up to
`MAX_ACTIVE_TASKS` (10) tasks of `DISPATCHES_PER_TASK` (10) dispatches ahead (mlx
transforms.cpp, backend/cpu/encoder.h), about two dispatches an op: some 50 ops, about one
decoder block of MLX's CPU ops (its attention block is some 50). On the CPU 4-bit kernels
the worker is that far behind, so a block's buffers are all alive together and still
alive while the next block is dispatched: here each op's outputs live until the block
after theirs ends (`end_block`), and a sync drops them all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.backend import Backend
from core.measurement.fields import QueueEmulation

DEFAULT_OP_CAP = 2000
"""`MLX_MAX_OPS_PER_BUFFER`'s default."""


def emulates_rocm(emulate: str, device_kind: Backend) -> bool:
    """Whether a run on `device_kind` emulates MLX-ROCm's in-flight queue (the request's
    `emulate`, `core.measurement.engine.EMULATE`: `auto` is ROCm's on ROCm and the CPU,
    which stands in for the ROCm machine, and none on CUDA, where MLX has no bound)."""
    if emulate == "auto":
        return device_kind in (Backend.ROCM, Backend.CPU)
    return QueueEmulation.named(emulate, "--emulate") is QueueEmulation.ROCM


class Event(Protocol):
    """What the queue needs from a completion event (torch.cuda.Event fits)."""

    def query(self) -> bool:
        """True once the work recorded before it has finished."""
        ...

    def synchronize(self) -> None:
        """Block the host until it has."""
        ...


class LaggingEvent:
    """A CPU stand-in: complete only once the host has waited on it."""

    __slots__ = ("_done",)

    def __init__(self) -> None:
        self._done = False

    def query(self) -> bool:
        """Never complete on its own."""
        return self._done

    def synchronize(self) -> None:
        """The host waited: the batch is done."""
        self._done = True


@dataclass
class Batch:
    """Ops grouped until commit, and the tensors they keep alive."""

    held: list[Any] = field(default_factory=list)
    bytes: int = 0
    ops: int = 0
    event: Event | None = None


@dataclass
class InflightStats:
    """What the queue did, for the result's details."""

    commits: int = 0
    waits: int = 0
    """Host waits forced by the budget (syncs at the end of a pass not counted)."""
    ops: int = 0
    max_committed_bytes: int = 0
    max_held_bytes: int = 0
    """Largest bytes held by committed plus open batches at any moment."""


class InflightQueue:
    """Open batch, committed batches, budget; see the module docstring."""

    def __init__(
        self,
        budget_bytes: int,
        record_event: Callable[[], Event],
        op_cap: int = DEFAULT_OP_CAP,
        *,
        emulate: bool = True,
        block_lag: bool = False,
    ) -> None:
        if budget_bytes < 0 or op_cap < 1:
            raise ValueError("budget must be >= 0 and op_cap >= 1")
        self.emulate = emulate
        """False: no batches (MLX-CUDA and MLX-CPU have no in-flight queue): ops are only
        counted, and held only by the block lag."""
        self.block_lag = block_lag and not emulate
        """MLX's CPU stream (no queue emulated): every op's outputs stay alive until the
        next decoder block's ops have been handed (`end_block`); see the module docstring."""
        self._this_block: list[Any] = []
        self._previous_block: list[Any] = []
        self.budget = budget_bytes
        self.op_cap = op_cap
        self._record_event = record_event
        self._open = Batch()
        self._committed: deque[Batch] = deque()
        self._committed_bytes = 0
        self.stats = InflightStats()

    @property
    def committed_bytes(self) -> int:
        """Bytes of committed batches whose events have not been seen complete."""
        return self._committed_bytes

    @property
    def open_bytes(self) -> int:
        """Bytes in the batch not yet committed."""
        return self._open.bytes

    def op(self, *outputs: Any) -> None:
        """Account one primitive: its outputs join the open batch (and stay alive).

        Completed batches are released first: MLX frees a batch's buffers from its
        completion handler, as soon as the event fires, not at the next commit (which,
        with the bound off, comes only every `op_cap` ops). An event query is cheap.
        """
        if not self.emulate:
            self.stats.ops += 1
            if self.block_lag:
                self._this_block.extend(t for t in outputs if t is not None)
            return
        self._release_completed()
        batch = self._open
        for tensor in outputs:
            if tensor is None:
                continue
            batch.held.append(tensor)
            batch.bytes += int(tensor.nbytes)
        batch.ops += 1
        self.stats.ops += 1
        held = self._committed_bytes + batch.bytes
        self.stats.max_held_bytes = max(self.stats.max_held_bytes, held)
        threshold_reached = self.budget > 0 and batch.bytes >= self.budget // 4
        if threshold_reached or batch.ops >= self.op_cap:
            self.commit()

    def commit(self) -> None:
        """Close the open batch, record its event, then apply the bound."""
        batch = self._open
        if batch.ops == 0:
            return
        self._open = Batch()
        batch.event = self._record_event()
        self._committed.append(batch)
        self._committed_bytes += batch.bytes
        self.stats.commits += 1
        self.stats.max_committed_bytes = max(self.stats.max_committed_bytes, self._committed_bytes)
        self._release_completed()
        if self.budget > 0:
            while self._committed and self._committed_bytes > self.budget:
                self._wait_oldest()
                self.stats.waits += 1

    def end_block(self) -> None:
        """A decoder block (attention, MLP or MoE) has handed all its ops: with the block
        lag, the block before it has now run, and its outputs are released."""
        if self.block_lag:
            self._previous_block = self._this_block
            self._this_block = []

    def sync(self) -> None:
        """The host needs a result (end of an eval): commit and wait for everything."""
        self._this_block, self._previous_block = [], []
        self.commit()
        while self._committed:
            self._wait_oldest()

    def _wait_oldest(self) -> None:
        batch = self._committed[0]
        assert batch.event is not None
        batch.event.synchronize()
        self._pop_oldest()

    def _release_completed(self) -> None:
        # Events complete in order on one stream: stop at the first pending one.
        while self._committed:
            event = self._committed[0].event
            if event is None or not event.query():
                break
            self._pop_oldest()

    def _pop_oldest(self) -> None:
        batch = self._committed.popleft()
        self._committed_bytes -= batch.bytes
        batch.held.clear()
