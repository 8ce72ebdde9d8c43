"""What the context chart plots: totals at any contexts, the range, the marker, the budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.measurement.engine import DEFAULT_ENGINE, Engine

ENGINE_MARKS = {Engine.TORCH: "◆", Engine.MLX: "●"}
"""A measured peak's mark on the chart, by the engine that measured it."""
MEASURED_MARK = ENGINE_MARKS[DEFAULT_ENGINE]

Point = tuple[int, int, Engine]
"""A measured peak: (context P + G, bytes, engine)."""

Totals = Callable[[Sequence[int]], list[int]]


@dataclass(frozen=True)
class ChartData:
    """What to plot: totals at any contexts, the range, the marker and the budget."""

    totals: Totals
    top_tokens: int
    current_tokens: int
    available: int
    key: object = None
    """Everything the totals depend on; equal keys reuse the last totals (the marker moves)."""
    points: tuple[Point, ...] = ()
    """Measured peaks, drawn as their engine's mark."""
