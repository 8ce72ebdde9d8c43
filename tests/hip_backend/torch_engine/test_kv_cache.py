"""The KV cache grows like mlx-lm's: 256-token steps, old and new alive during the copy."""

from __future__ import annotations

from typing import Any

from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent
from hip_backend.torch_engine.kv_cache import KV_STEP, KVCache
from tests.installed import Later, needs

torch = Later("torch")
pytestmark = needs("torch")


def kv(length: int, start: float = 0.0) -> tuple[Any, Any]:
    values = torch.arange(start, start + length, dtype=torch.float32)
    k = values.view(1, 1, length, 1).expand(1, 2, length, 4).to(torch.float16).contiguous()
    return k, k.clone()


def test_capacity_follows_mlx_lm_steps_through_chunked_prefill_and_decode() -> None:
    queue = InflightQueue(0, LaggingEvent)
    cache = KVCache(queue)
    cache.update(*kv(512))  # one full prefill chunk
    assert cache.capacity == 512
    cache.update(*kv(88, 512))  # 600 tokens: one more step of 256
    assert cache.capacity == 768
    for i in range(168):  # decode up to 768 exactly: no growth
        cache.update(*kv(1, 600 + i))
    assert (cache.offset, cache.capacity) == (768, 768)
    cache.update(*kv(1, 768))
    assert cache.capacity == 1024
    assert cache.nbytes == 2 * 2 * 1024 * 4 * 2  # K and V, 2 heads, head_dim 4, fp16


def test_growth_after_an_unaligned_length_trims_first_as_mlx_lm_does() -> None:
    cache = KVCache(InflightQueue(0, LaggingEvent))
    cache.update(*kv(20))
    assert cache.capacity == KV_STEP
    cache.update(*kv(300, 20))  # 320 > 256: trim to 20, append ceil(300/256) steps
    assert cache.capacity == 20 + 512


def test_contents_survive_growth() -> None:
    cache = KVCache(InflightQueue(0, LaggingEvent))
    cache.update(*kv(250))
    keys, values = cache.update(*kv(10, 250))
    assert keys.shape == (1, 2, 260, 4)
    assert torch.equal(keys[0, 0, :, 0], torch.arange(260, dtype=torch.float16))
    assert torch.equal(values, keys)


def test_growth_buffers_count_as_in_flight_bytes() -> None:
    queue = InflightQueue(0, LaggingEvent)
    cache = KVCache(queue)
    cache.update(*kv(1))
    assert queue.open_bytes == 2 * (2 * 256 * 4 * 2)  # the zero blocks for K and V
