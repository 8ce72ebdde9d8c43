"""mlx-lm 0.32.2's per-layer caches, as `mlx_lm/models/cache.py` grows them.

Pure arithmetic over the schedule `generate_step` runs: the first `prompt - 1` tokens in
prefill chunks of `PREFILL_STEP` (2,048), then one token a call (the prompt's last
token, then each generated one). What a cache holds after that is a buffer length in
tokens, per layer:

- `KVCache`: grows in steps of 256 (its `step`): a chunk of S tokens that does not fit
  adds `ceil(S / 256) * 256` slots after trimming the unused tail, so under that
  schedule it holds `ceil(T / 256) * 256` slots after T tokens.
- `RotatingKVCache(max_size=W, keep)`: a chunk of more than one token is concatenated
  (`_update_concat`: what is held, cut to `W - 1`, plus the chunk), so a prefill past
  the window holds up to `W - 1 + 2,048` slots until the next single-token call trims
  it back to W (`_update_in_place`); below W it grows by `min(256, W - offset)`.
- `QuantizedKVCache` (`kv_bits`): `maybe_quantize_kv_cache` turns a `KVCache` into one
  once its offset reaches `quantized_kv_start` (5,000 by default); it keeps the
  buffer's slots and grows as `KVCache` does. mlx-lm cannot quantize a rotating cache
  (`NotImplementedError`), and `ArraysCache` has no `to_quantized`.
- `ArraysCache`: a linear-attention layer's fixed state (conv window and recurrent
  state), whatever the context.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

CACHE_STEP = 256
"""`KVCache.step`, `RotatingKVCache.step`, `QuantizedKVCache.step`."""
PREFILL_STEP = 2048
"""`generate_step`'s `prefill_step_size` default."""
QUANTIZED_KV_START = 5000
"""`generate_step`'s `quantized_kv_start` default (`DEFAULT_QUANTIZED_KV_START`)."""
KV_GROUP_SIZE = 64
"""`generate_step`'s `kv_group_size` default."""


class CacheKind(Enum):
    """The cache class mlx-lm's `make_cache` builds for one layer."""

    KV = "KVCache"
    ROTATING = "RotatingKVCache"
    ARRAYS = "ArraysCache"


@dataclass(frozen=True)
class LayerCache:
    """One layer's cache: its class and what one token of it holds."""

    kind: CacheKind
    k_heads: int = 0
    k_dim: int = 0
    v_heads: int = 0
    v_dim: int = 0
    dtype_bytes: int = 2
    """The keys' and values' dtype: the layer's activations (its weights' dtype)."""
    window: int = 0
    """`max_size` of a rotating cache."""
    keep: int = 0
    state_bytes: int = 0
    """An `ArraysCache`'s fixed state per sequence (conv window and recurrent state)."""

    def token_bytes(self, kv_bits: int | None = None) -> int:
        """Bytes one slot of keys and values takes for one sequence (`kv_bits`:
        quantized, 32-bit words of packed values plus a scale and a bias per group)."""
        if kv_bits is None:
            return (self.k_heads * self.k_dim + self.v_heads * self.v_dim) * self.dtype_bytes
        return self.k_heads * _quantized_row(self.k_dim, kv_bits, self.dtype_bytes) + (
            self.v_heads * _quantized_row(self.v_dim, kv_bits, self.dtype_bytes)
        )


def _quantized_row(dim: int, bits: int, dtype_bytes: int) -> int:
    """One head's row in `QuantizedKVCache`: `dim // (32 // bits)` uint32 words, and
    `dim // 64` scales and biases in the activations' dtype."""
    words = dim // (32 // bits)
    return 4 * words + 2 * (dim // KV_GROUP_SIZE) * dtype_bytes


@dataclass(frozen=True)
class Schedule:
    """How `generate_step` feeds the tokens: the prompt's chunks, then one a call."""

    tokens: int
    """Prompt and generated tokens together: the cache's offset at the end."""
    prompt: int
    """Of those, the prompt (at least 1 when tokens > 0)."""

    @classmethod
    def of(cls, tokens: int, prompt: int | None = None) -> Schedule:
        """`prompt` defaults to every token (the longest prefill)."""
        tokens = max(0, tokens)
        p = tokens if prompt is None else min(max(1, prompt), tokens)
        return cls(tokens, p if tokens else 0)

    @property
    def chunks(self) -> tuple[int, int, int]:
        """(full chunks of 2,048, the last concatenated chunk's size or 0, the tokens fed
        one at a time): a chunk of one token takes the single-token path."""
        before_last = max(0, self.prompt - 1)
        full, rest = divmod(before_last, PREFILL_STEP)
        last = rest if rest >= 2 else 0
        return full, last, self.tokens - full * PREFILL_STEP - last


def kv_slots(tokens: int) -> int:
    """A `KVCache`'s (or `QuantizedKVCache`'s) slots after `tokens` under the schedule."""
    return -(-tokens // CACHE_STEP) * CACHE_STEP


def _concat_held(schedule: Schedule, window: int) -> tuple[int, int]:
    """(slots after the last concatenated chunk, the most after any), 0 without one.

    After chunk k a rotating cache holds what it held cut to `window - 1` plus the chunk
    (mlx-lm keeps every token `window` tokens of context): `min(2,048 k, window - 1) +
    size`, which grows with k, so the last full chunk and the last short one bound it.
    """
    full, last, _ = schedule.chunks
    after_full = min(PREFILL_STEP * (full - 1), window - 1) + PREFILL_STEP if full else 0
    after_last = min(PREFILL_STEP * full, window - 1) + last if last else 0
    return (after_last if last else after_full), max(after_full, after_last)


def rotating_slots(schedule: Schedule, window: int) -> int:
    """A `RotatingKVCache(max_size=window)`'s slots at the end of the schedule."""
    if schedule.tokens == 0:
        return 0
    *_, singles = schedule.chunks
    held, _ = _concat_held(schedule, window)
    if held >= window:
        return window  # the first single-token call trims it back to the window
    # Below the window every slot is used: it grows by min(256, window - offset).
    return min(window, held + kv_slots(singles))


def rotating_prefill_peak(schedule: Schedule, window: int) -> int:
    """The most slots a rotating cache holds at any point of the schedule: a prefill
    chunk concatenated onto a full window holds `window - 1 + chunk`."""
    _, most = _concat_held(schedule, window)
    return max(rotating_slots(schedule, window), most)


def quantized(kind: CacheKind, tokens: int, kv_bits: int | None, start: int) -> bool:
    """Whether mlx-lm holds this layer quantized at the end: a `KVCache` whose offset
    reached `quantized_kv_start` (a rotating cache cannot be; an `ArraysCache` is not)."""
    return kv_bits is not None and kind is CacheKind.KV and tokens >= start and tokens > 0


def layer_bytes(
    cache: LayerCache,
    schedule: Schedule,
    batch: int = 1,
    kv_bits: int | None = None,
    quantized_kv_start: int = QUANTIZED_KV_START,
) -> int:
    """`cache.nbytes` at the end of the schedule, for `batch` sequences."""
    if schedule.tokens == 0:
        return 0
    if cache.kind is CacheKind.ARRAYS:
        return batch * cache.state_bytes
    if cache.kind is CacheKind.ROTATING:
        return batch * rotating_slots(schedule, cache.window) * cache.token_bytes()
    bits = kv_bits if quantized(cache.kind, schedule.tokens, kv_bits, quantized_kv_start) else None
    return batch * kv_slots(schedule.tokens) * cache.token_bytes(bits)
