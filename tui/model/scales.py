"""The stops each slider moves between, and where a typed value sits among them.

Sliders move between fixed stops spaced evenly on screen. Token stops grow
geometrically (four per octave), which makes the token slider log-scaled; the
in-flight budget gets the round MiB values people actually set. A typed value
between two stops sits proportionally between them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

MIN_TOKENS = 256
FALLBACK_MAX_TOKENS = 131072
"""Slider top when a config does not say `max_position_embeddings`."""

INFLIGHT_STOPS: tuple[int, ...] = (
    0,
    64,
    128,
    256,
    512,
    768,
    1024,
    1536,
    2048,
    3072,
    4096,
    6144,
    8192,
)
BATCH_STOPS: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
PARALLEL_STOPS: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
"""llama.cpp's `--parallel` slots."""
UBATCH_STOPS: tuple[int, ...] = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
"""llama.cpp's `--ubatch-size` (default 512): the compute buffer is sized for it."""
ALL_GPU_LAYERS = 1 << 20
"""The layers-on-GPU slider's last stop, "all": llama.cpp's `--n-gpu-layers -1` (past
any model's `n_layer + 1`, so the knob sits at the end whatever the model)."""
FACTOR_STOPS: tuple[float, ...] = tuple(round(1.0 + i * 0.05, 2) for i in range(21))
"""1.00 to 2.00 in 0.05 steps; `round` makes 1.2 the same double as the literal 1.2."""


def token_stops(max_position: int | None) -> tuple[int, ...]:
    """256, 320, 384, 448, 512, 640, ... up to the trained context, which is the last stop."""
    top = max(max_position or FALLBACK_MAX_TOKENS, MIN_TOKENS)
    stops: list[int] = []
    base = MIN_TOKENS
    while base < top:
        for quarter in (4, 5, 6, 7):
            value = base * quarter // 4
            if value < top:
                stops.append(value)
        base *= 2
    stops.append(top)
    return tuple(stops)


def layer_stops(layer_count: int | None) -> tuple[int, ...]:
    """0, 1, ... `n_layer + 1` (llama.cpp's offloadable layers: the repeating ones and the
    output layer), then "all"; before a GGUF is read, 0 and "all"."""
    return (*range((layer_count or 0) + 1), ALL_GPU_LAYERS)


def position_of(value: float, stops: Sequence[float]) -> float:
    """The slider position (a fractional stop index) of a value, clamped to the track."""
    if value <= stops[0]:
        return 0.0
    if value >= stops[-1]:
        return float(len(stops) - 1)
    i = bisect_right(stops, value) - 1
    lo, hi = stops[i], stops[i + 1]
    return i + (value - lo) / (hi - lo)


def short_tokens(n: int) -> str:
    """`256`, `4K`, `128K`, `1M`, and `3.2M` or `130.5K` off the round values: an axis tick."""
    if n >= 1 << 20:
        return f"{n >> 20}M" if n % (1 << 20) == 0 else f"{n / (1 << 20):.1f}M"
    if n >= 1024:
        return f"{n >> 10}K" if n % 1024 == 0 else f"{n / 1024:.1f}K"
    return str(n)
