"""The bounded in-flight queue: commits at budget/4, waits while over budget, 0 never waits."""

from __future__ import annotations

import gc
import weakref

import pytest

from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent

MIB = 1 << 20


class Buffer:
    """Something with `nbytes`, like a tensor; weakly referenceable to watch its lifetime."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


class DeviceEvent:
    """A GPU-like event: completes when the 'device' reaches it, or when waited on."""

    def __init__(self, log: list[str]) -> None:
        self.done = False
        self.log = log

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        self.log.append("wait")
        self.done = True


def test_batch_commits_when_its_bytes_reach_a_quarter_of_the_budget() -> None:
    queue = InflightQueue(64 * MIB, LaggingEvent)
    queue.op(Buffer(10 * MIB))
    assert (queue.stats.commits, queue.open_bytes) == (0, 10 * MIB)
    queue.op(Buffer(6 * MIB))  # 16 MiB = 64/4
    assert (queue.stats.commits, queue.open_bytes, queue.committed_bytes) == (1, 0, 16 * MIB)


def test_host_waits_on_the_oldest_batches_while_committed_bytes_exceed_the_budget() -> None:
    queue = InflightQueue(64 * MIB, LaggingEvent)
    for _ in range(4):
        queue.op(Buffer(16 * MIB))  # four batches of exactly 16 MiB: 64, not over
    assert (queue.committed_bytes, queue.stats.waits) == (64 * MIB, 0)
    queue.op(Buffer(20 * MIB))  # 84 MiB committed: wait on the two oldest -> 52
    assert queue.stats.waits == 2
    assert queue.committed_bytes == 52 * MIB
    assert queue.stats.max_held_bytes == 84 * MIB


def test_committed_batches_keep_their_tensors_alive_until_their_event_completes() -> None:
    log: list[str] = []
    events: list[DeviceEvent] = []

    def record() -> DeviceEvent:
        events.append(DeviceEvent(log))
        return events[-1]

    queue = InflightQueue(0, record, op_cap=2)
    first = Buffer(MIB)
    watch = weakref.ref(first)
    queue.op(first)
    queue.op(Buffer(MIB))  # op cap: commit
    del first
    gc.collect()
    assert watch() is not None  # in flight
    events[0].done = True  # the device finished that batch
    queue.op(Buffer(MIB))  # the very next op, not the next commit, releases it
    gc.collect()
    assert watch() is None
    assert queue.stats.commits == 1
    assert (queue.committed_bytes, queue.open_bytes) == (0, MIB)
    assert log == []  # budget 0: the host never waited


def test_budget_zero_never_waits_and_commits_only_at_the_op_cap() -> None:
    queue = InflightQueue(0, LaggingEvent, op_cap=100)
    for _ in range(250):
        queue.op(Buffer(64 * MIB))
    assert queue.stats.commits == 2
    assert queue.stats.waits == 0
    assert queue.committed_bytes + queue.open_bytes == 250 * 64 * MIB
    queue.sync()  # the host reads a result: everything completes
    assert queue.committed_bytes + queue.open_bytes == 0


@pytest.mark.parametrize("budget_mib", [16, 64, 256])
def test_held_bytes_stay_near_the_budget(budget_mib: int) -> None:
    """Many 4 MiB transients: the queue never holds more than budget + one batch."""
    budget = budget_mib * MIB
    queue = InflightQueue(budget, LaggingEvent)
    for _ in range(500):
        queue.op(Buffer(4 * MIB))
    assert budget <= queue.stats.max_held_bytes <= budget + budget // 4 + 4 * MIB


def test_lagging_event_completes_only_when_waited_on() -> None:
    event = LaggingEvent()
    assert not event.query()
    event.synchronize()
    assert event.query()


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="budget"):
        InflightQueue(-1, LaggingEvent)
    with pytest.raises(ValueError, match="op_cap"):
        InflightQueue(0, LaggingEvent, op_cap=0)


def test_block_lag_keeps_a_block_s_outputs_until_the_next_block_ends() -> None:
    """MLX's CPU stream: a block's buffers outlive it by one block; a sync drops all."""
    queue = InflightQueue(0, LaggingEvent, emulate=False, block_lag=True)
    first, second = Buffer(MIB), Buffer(MIB)
    watch_first, watch_second = weakref.ref(first), weakref.ref(second)
    queue.op(first)
    queue.op(None, second)  # a block's ops, `None` for a view
    del first, second
    queue.end_block()
    gc.collect()
    assert watch_first() is not None and watch_second() is not None  # the next block runs
    third = Buffer(MIB)
    watch_third = weakref.ref(third)
    queue.op(third)
    del third
    queue.end_block()  # the block after theirs ended: the first block's outputs go
    gc.collect()
    assert (watch_first(), watch_second()) == (None, None)
    assert watch_third() is not None
    queue.sync()
    gc.collect()
    assert watch_third() is None
    assert queue.stats.ops == 3


@pytest.mark.parametrize(("emulate", "block_lag"), [(False, False), (True, True)])
def test_no_block_lag_without_it_or_under_the_rocm_queue(emulate: bool, block_lag: bool) -> None:
    queue = InflightQueue(0, LaggingEvent, emulate=emulate, block_lag=block_lag)
    assert not queue.block_lag
    buffer = Buffer(MIB)
    watch = weakref.ref(buffer)
    queue.op(buffer)
    del buffer
    queue.end_block()
    queue.sync()  # the ROCm queue drops its batches here too
    gc.collect()
    assert watch() is None
