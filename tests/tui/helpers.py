"""Helpers for the explorer tests: waiting for the app and reading the screen back.

The builders (fixed world, app, peaks, key bursts) are in tests/factories.py.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

from textual.app import App
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Footer

from tests.factories import (
    GFX1151_LIMIT,
    LLAMA,
    MEMINFO_32G,
    NO_GPU,
    ROCM_MACHINE,
    build_app,
    burst,
    fixed_deps,
)
from tui.app import VramscopeApp
from tui.headless import wait_until_settled
from tui.widgets.breakdown import Breakdown


def displayed(node: Widget, selector: str) -> bool:
    """Whether a widget under `node` matching `selector` is there and displayed: a
    control's row that the state has never shown is not mounted at all."""
    return any(widget.display for widget in node.query(selector))


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until the background reads are done and the screen repainted."""
    await wait_until_settled(pilot)


async def handled(pilot: Pilot[Any]) -> None:
    """Wait until every key posted so far has been handled, then let what it caused paint.

    An event, not a time: a call queued behind the keys tells when the app has seen them
    all, and the app's key order (tui/key_order.py) when the last one has been handled.
    Pausing until the app looked idle was a guess that a loaded machine broke: a process
    off the CPU spends no CPU time and looks idle with keys still queued.
    """
    app = pilot.app
    seen = asyncio.Event()
    app.call_later(seen.set)

    def done() -> bool:
        return seen.is_set() and (not isinstance(app, VramscopeApp) or app.key_order.idle)

    await wait_for(pilot, done, "the keys posted to be handled")
    await pilot.pause()


async def type_keys(pilot: Pilot[Any], text: str) -> None:
    """Send `text` as one burst (`burst`: a paste or a fast typist, no pause between keys,
    `\r` Enter, `\x1b` Escape) and wait until it has been handled. Pilot's `press` waits
    for the app to idle after every key (40 ms or more each); tests/tui/test_trust.py shows
    bursts land exactly as keys pressed one by one do."""
    burst(pilot.app, text)
    await handled(pilot)


def settle_then(*keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A snapshot `run_before`: settle, press keys, settle again."""

    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)

    return run


async def wait_for(
    pilot: Pilot[Any], condition: Callable[[], bool], what: str, limit_s: float = 120.0
) -> None:
    """Let the app run until `condition()` holds; fail naming `what` if it never does.

    The limit only stops a broken run from hanging the suite; nothing is timed.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await asyncio.sleep(0.02)
        await pilot.pause()


def widget_lines(widget: Widget) -> list[str]:
    """The widget's text exactly as it is painted on screen, one string per row."""
    region = Region(0, 0, widget.outer_size.width, widget.outer_size.height)
    return [strip.text.rstrip() for strip in widget.render_lines(region)]


def footer_line(app: App[Any]) -> str:
    """The screen's footer as painted: each key at its column (Textual's public API has
    no screen text; each widget's own lines are `render_lines`)."""
    footer = app.screen.query_one(Footer)
    left, width = footer.region.x, footer.region.width
    cells = [" "] * width
    for widget in footer.query("*"):
        region = widget.region
        if widget.children or not region.width or region.y != footer.region.y:
            continue
        strip = widget.render_lines(Region(0, 0, region.width, 1))[0]
        for i, ch in enumerate(strip.text[: region.width]):
            if 0 <= region.x - left + i < width:
                cells[region.x - left + i] = ch
    return "".join(cells)


_ROW = re.compile(
    r"^(?P<label>[A-Za-z][A-Za-z -]*?)\s{2,}(?P<size>[\d.]+ (?:GiB|MiB|KiB|B))"
    r"\s+(?P<bytes>\d[\d,]*)\b"
)


def breakdown_bytes(app: VramscopeApp) -> dict[str, int]:
    """Label -> the bytes column, read off the painted breakdown."""
    rows: dict[str, int] = {}
    for line in widget_lines(app.screen.query_one(Breakdown)):
        m = _ROW.match(line)
        if m:
            rows[m.group("label").strip()] = int(m.group("bytes").replace(",", ""))
    return rows


def breakdown_text(app: VramscopeApp) -> str:
    """The painted breakdown as one string."""
    return "\n".join(widget_lines(app.screen.query_one(Breakdown)))


__all__ = [
    "GFX1151_LIMIT",
    "LLAMA",
    "MEMINFO_32G",
    "NO_GPU",
    "ROCM_MACHINE",
    "breakdown_bytes",
    "breakdown_text",
    "build_app",
    "burst",
    "fixed_deps",
    "footer_line",
    "settle",
    "settle_then",
    "wait_for",
    "widget_lines",
]
