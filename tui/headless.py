"""Running the explorer without a terminal: wait until it has settled, then take a screenshot.

Used by `vramscope screenshot`, `scripts/make_screenshots.py`, the benchmark
and the tests, so all of them see the screen a user would see once the
background reads are done.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Sequence
from typing import Any

from textual.pilot import Pilot

from core.display_text import clean_text
from core.measurement.result import MeasuredPeak
from tui.app import VramscopeApp, make_app
from tui.deps import AppDeps
from tui.model.state import LaunchOptions

SETTLE_TIMEOUT_S = 30.0


async def wait_until_settled(pilot: Pilot[object], timeout: float = SETTLE_TIMEOUT_S) -> None:
    """Wait for the catalog, available memory and model workers, then for the repaint."""
    app = pilot.app
    assert isinstance(app, VramscopeApp)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.explorer.settled:
            break
        await asyncio.sleep(0.01)
    await pilot.pause()


def render_svg(
    deps: AppDeps,
    options: LaunchOptions,
    size: tuple[int, int],
    press: Sequence[str] = (),
    measured: MeasuredPeak | None = None,
    title: str = "vramscope",
) -> str:
    """The settled screen as SVG, after pressing `press` (Textual key names)."""
    app = make_app(deps, options, measured)
    result: list[str] = []

    async def auto_pilot(pilot: Pilot[object]) -> None:
        await wait_until_settled(pilot)
        if press:
            await pilot.press(*press)
            await wait_until_settled(pilot)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        result.append(app.export_screenshot(title=title))
        app.exit()

    app.run(headless=True, size=size, auto_pilot=auto_pilot)
    if not result:
        raise RuntimeError("the explorer exited before its screenshot was taken")
    return result[0]


PNG_FONT = "DejaVu Sans Mono"
"""A monospace font found on Debian-like systems; Fira Code (the SVG's) rarely is."""
_TEXT_RUN = re.compile(
    r'<text class="(?P<cls>[^"]*)" x="(?P<x>[\d.]+)" y="(?P<y>[\d.]+)" '
    r'textLength="(?P<len>[\d.]+)" clip-path="(?P<clip>[^"]*)">(?P<body>[^<]*)</text>'
)


def png_ready_svg(svg: str, font: str = PNG_FONT) -> str:
    """The SVG with its web-font block removed and a locally installed monospace font named.

    Rich's SVG asks for Fira Code from a CDN; without it cairo falls back to a
    proportional face and the columns drift.
    """
    svg = re.sub(r"@font-face\s*\{[^}]*\}", "", svg)
    svg = svg.replace("font-family: Fira Code, monospace", f"font-family: {font}, monospace")
    # cairo ignores textLength, so a run drifts by its font's advance error; placing
    # every character at its own cell keeps columns and bars exact.
    return _TEXT_RUN.sub(_one_text_per_cell, svg)


def _one_text_per_cell(m: re.Match[str]) -> str:
    chars = html.unescape(m.group("body"))
    if len(chars) <= 1:
        return m.group(0)
    x0, cell = float(m.group("x")), float(m.group("len")) / len(chars)
    return "".join(
        f'<text class="{m.group("cls")}" x="{x0 + i * cell:.1f}" y="{m.group("y")}" '
        f'clip-path="{m.group("clip")}">{html.escape(ch)}</text>'
        for i, ch in enumerate(chars)
        if ch not in (" ", "\xa0")
    )


class PngUnavailable(RuntimeError):
    """cairosvg, or the cairo library under it, is not installed."""


PNG_INSTALL = "pip install 'vramscope[png]'"
"""What installs cairosvg (libcairo itself comes from the system's packages)."""


def _cairosvg() -> Any:
    try:
        import cairosvg
    except (ImportError, OSError) as exc:  # cairocffi raises OSError without libcairo
        raise PngUnavailable(
            f"writing PNG needs cairosvg and libcairo ({type(exc).__name__}: "
            f"{clean_text(str(exc))[:120]}): {PNG_INSTALL} and the system's libcairo, "
            "or write .svg"
        ) from None
    return cairosvg


def check_png() -> None:
    """Raise `PngUnavailable` now, before a screenshot is rendered, when PNG cannot be written."""
    _cairosvg()


def svg_to_png(svg: str, width: int) -> bytes:
    """Rasterise an SVG screenshot (needs cairosvg, the `png` extra, and libcairo)."""
    cairosvg = _cairosvg()
    png = cairosvg.svg2png(bytestring=png_ready_svg(svg).encode("utf-8"), output_width=width)
    assert isinstance(png, bytes)
    return png
