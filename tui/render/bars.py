"""Proportional bars in eighth-cell steps, plain and stacked (pure Rich text)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import Style
from rich.text import Text

_EIGHTHS = " ▏▎▍▌▋▊▉"
FULL = "█"


def eighths(value: int, scale: int, width: int) -> int:
    """`value / scale` of `width` cells, in eighths of a cell, clamped to the width."""
    if scale <= 0 or width <= 0:
        return 0
    return min(width * 8, (value * width * 8 + scale // 2) // scale)


def bar(value: int, scale: int, width: int, style: Style | str = "") -> Text:
    """A left-aligned bar `width` cells wide; a non-zero value shows at least a sliver."""
    n = eighths(value, scale, width)
    if value > 0 and n == 0:
        n = 1
    text = Text(FULL * (n // 8) + (_EIGHTHS[n % 8] if n % 8 else ""), style=style)
    text.pad_right(width - text.cell_len)
    return text


def stacked_bar(
    parts: Sequence[tuple[int, Style | str]],
    scale: int,
    width: int,
    overflow_style: Style | str = "",
) -> Text:
    """Parts side by side in whole cells against `scale`; what passes `scale` ends in `▶`."""
    text = Text()
    total = 0
    used = 0
    for value, style in parts:
        total += value
        end = min(width, eighths(total, scale, width) // 8)
        if end > used:
            text.append(FULL * (end - used), style)
            used = end
    if used == 0 and total > 0 and width > 0:
        # Too small for a whole cell: a sliver in the colour of the largest part.
        text.append(_EIGHTHS[1], max(parts, key=lambda p: p[0])[1])
    if scale > 0 and total > scale and width > 0:
        text = text[: width - 1]
        text.append("▶", overflow_style)
    text.pad_right(width - text.cell_len)
    return text
