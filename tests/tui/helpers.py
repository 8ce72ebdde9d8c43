"""Helpers for the explorer tests: a fixed machine, built-in profiles only, screen readers.

Nothing here reads this machine's /proc/meminfo, GPU or HF cache: the app gets
`builtin_deps` with a fixed detected backend and available memory, so Pilot
tests and snapshots are the same on every machine.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget

from core.available import AvailableMemory
from core.backend import Backend, BackendChoice
from tui.app import VramscopeApp, make_app
from tui.deps import AppDeps, builtin_deps
from tui.headless import wait_until_settled
from tui.model.state import LaunchOptions
from tui.widgets.breakdown import Breakdown

NO_GPU = BackendChoice(Backend.CPU, True, "no GPU device node found")
ROCM_MACHINE = BackendChoice(Backend.ROCM, True, "/dev/kfd (AMD KFD) present")
MEMINFO_32G = AvailableMemory(32 * 1024**3, "/proc/meminfo")
LLAMA = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
GFX1151_LIMIT = 82_463_372_083


def fixed_deps(
    machine: BackendChoice = NO_GPU, available: AvailableMemory = MEMINFO_32G, **changes: Any
) -> AppDeps:
    """The fixed world of the explorer tests (fields of AppDeps may be replaced)."""
    return replace(builtin_deps(available, machine), **changes)


def build_app(deps: AppDeps | None = None, **options: Any) -> VramscopeApp:
    """The real app over the fixed world; `options` are LaunchOptions fields."""
    return make_app(deps or fixed_deps(), LaunchOptions(**options))


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until the background reads are done and the screen repainted."""
    await wait_until_settled(pilot)


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
