"""What the explorer shows for a GGUF: llama.cpp's load term by term, each split between
the device and the host, the totals per place, the verdict, the largest context and
`--n-gpu-layers`, and the summary line, in `inspect`'s words (`core.gguf_load.report`).
Pure: the breakdown widget styles and draws the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.display_text import clean_text
from core.units import format_bytes_short
from tui.model.chart_data import ChartData
from tui.model.scales import FALLBACK_MAX_TOKENS, short_tokens
from tui.model.views import Summary

if TYPE_CHECKING:
    from core.gguf_load.answer import GgufAnswer

HEADING = "llama.cpp's load (vramscope's own: mlxcel's estimate does not apply to a GGUF) at "
"""The table's first words: what it is, and that mlxcel's banner is not beside it."""


@dataclass(frozen=True)
class GgufRow:
    """One kind of term: its bytes on the device and on the host, and its words."""

    kind: str
    """`weights`, `kv`, `output`, `compute`, `projector` (`inspect`'s words)."""
    device_bytes: int | None
    """None: the device holds none of it (`-ngl 0`, or a host-only term)."""
    host_bytes: int | None
    note: str


@dataclass(frozen=True)
class GgufView:
    """The breakdown of one answer, ready to draw."""

    heading: str
    rows: tuple[GgufRow, ...]
    device_total: int | None
    host_total: int
    total_bytes: int
    fits: bool | None
    held: str
    """`held against available ...: the device's share, ...` (`inspect`'s line)."""
    lines: tuple[str, ...]
    """The offload, the largest context and the largest `--n-gpu-layers` that fits."""
    notes: tuple[str, ...]


def gguf_view(found: GgufAnswer) -> GgufView:
    """The breakdown of `found`, every figure and sentence as `inspect` gives it."""
    from core.gguf_load.report import gpu_layers_words, held_words, offload_words
    from core.load.load import Placement

    load = found.load
    places = {share.placement: share for share in load.shares}
    device, host = places.get(Placement.DEVICE), places.get(Placement.HOST)
    kinds = list(dict.fromkeys(t.kind for t in load.terms))
    rows = []
    for kind in kinds:
        on_device = [t for t in device.terms if t.kind is kind] if device else []
        on_host = [t for t in host.terms if t.kind is kind] if host else []
        notes = list(dict.fromkeys(t.detail for t in load.terms if t.kind is kind and t.detail))
        rows.append(
            GgufRow(
                kind.value,
                sum(t.bytes for t in on_device) if on_device else None,
                sum(t.bytes for t in on_host) if on_host else None,
                clean_text("; ".join(notes)),
            )
        )
    lines = [f"--n-gpu-layers: {offload_words(found)}"]
    lines.append(f"largest context by the load: {found.context.words}")
    fitting = gpu_layers_words(found)
    if fitting is not None:
        lines.append(f"largest --n-gpu-layers that fits: {fitting}")
    return GgufView(
        heading=f"{HEADING}{load.tokens:,} tokens",
        rows=tuple(rows),
        device_total=device.total_bytes if device else None,
        host_total=host.total_bytes if host else 0,
        total_bytes=load.total_bytes,
        fits=found.fits,
        held=clean_text(held_words(found)),
        lines=tuple(clean_text(line) for line in lines),
        notes=tuple(clean_text(n) for n in load.notes),
    )


def verdict_word(fits: bool | None) -> str:
    """`FITS`, `DOES NOT FIT`, or why there is no verdict (`inspect`'s load line)."""
    return {True: "FITS", False: "DOES NOT FIT", None: "NO VERDICT"}[fits]


def gguf_summary(name: str, found: GgufAnswer | str, tokens: int, activity: str) -> Summary:
    """The summary line: the verdict, what is held against what, the model."""
    if isinstance(found, str):
        return Summary(name, f"llama.cpp: {clean_text(found)}", activity=activity)
    held = format_bytes_short(found.held_bytes)
    of = format_bytes_short(found.available_bytes)
    where = "on the device" if found.plan.offloaded_layers else "on the host"
    detail = f"{tokens:,} tokens · llama.cpp {held} {where} of {of}"
    short = f"{short_tokens(tokens)} · {held} of {of}"
    tiny = f"{short_tokens(tokens)} · {held}"
    verdict = "" if found.fits is None else verdict_word(found.fits)
    return Summary(name, detail, short, found.fits, verdict, activity, tiny=tiny)


def gguf_chart(found: GgufAnswer, trained: int | None) -> ChartData:
    """The chart's data: what llama.cpp's load holds against the available memory (the
    device's share, or the whole load on the host alone) at every context."""
    plan = found.plan
    offloaded = bool(plan.offloaded_layers)

    def totals(contexts: Sequence[int]) -> list[int]:
        loads = [plan.at(max(n, 1)) for n in contexts]
        return [load.device_bytes if offloaded else load.total_bytes for load in loads]

    return ChartData(
        totals=totals,
        top_tokens=trained or FALLBACK_MAX_TOKENS,
        current_tokens=found.load.tokens,
        available=found.available_bytes,
        key=(id(plan), plan.options),  # the context alone moves only the marker
    )
