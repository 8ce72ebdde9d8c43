"""What `vramscope explore` has imported, and shows, when its first frame is written.

The first frame shows the answer: the top lines, with the estimate's verdict and
total (`tui.controllers.first_reads`), and the footer. The body (model list,
controls, breakdown, chart), the history, the calibrations, the other commands, the
help and the palette come after it. An import added to that path slows every start:
this pins what stays out.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

from tui.commands.registry import COMMANDS

ROOT = Path(__file__).resolve().parents[2]

# `vramscope explore` through the real `main` on a pseudo-terminal (it refuses to open
# without one), with the app run headless; the modules are written when Textual says
# its first frame is out (`Ready`, which the explorer's body waits for).
CHILD = """
import asyncio, json, sys
from tui.app import VramscopeApp
out = sys.argv[1]
seen = {}
ready = VramscopeApp.on_ready

def on_screen(screen):
    return sorted({type(w).__name__ for w in screen.walk_children()})

def first(self):
    if not seen:
        screen = self.screen
        seen["modules"] = sorted(sys.modules)
        seen["widgets"] = on_screen(screen)
        seen["summary"] = screen.query_one("#summary").text
    ready(self)

async def headless(app):
    async with app.run_test(size=(160, 48)) as pilot:
        while not seen:
            await pilot.pause()
        seen["widgets_after"] = on_screen(app.screen)
    with open(out, "w") as f:
        json.dump(seen, f)

VramscopeApp.on_ready = first
VramscopeApp.run = lambda self, **kw: asyncio.run(headless(self))
from tui.cli import main
sys.exit(main(["explore", "--preset", "gfx1151"]))
"""


def first_frame(tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "modules.json"
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"), XDG_CONFIG_HOME=str(tmp_path))
    master, slave = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, "-c", CHILD, str(out)],
            stdin=slave,
            stdout=slave,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        os.close(slave)
        os.close(master)
    found: dict[str, Any] = json.loads(out.read_text())
    return found


def test_the_first_frame_waits_for_no_other_commands_or_later_reads(tmp_path: Path) -> None:
    loaded = set(first_frame(tmp_path)["modules"])
    assert "tui.screens.explorer_screen" in loaded  # the frame was the explorer's
    others = {f"tui.commands.{c.module}" for c in COMMANDS if c.name != "explore"}
    assert loaded & others == set()
    later = (
        "torch",
        "hip_backend",
        "core.calibration",  # the calibrations are read after the first frame
        "core.fit.models",  # the Fits view
        "core.hub.",  # a Hub read (the first model is a profile here)
        "core.estimate.report",  # inspect's banner
        "core.parallel.report",
        "tui.controllers.ranks",  # Devices > 1
        "tui.screens.history_screen",
        "tui.screens.help_screen",
        "tui.screens.palette",
        "tui.screens.fits_screen",
        "tui.widgets.model_list",  # the body's widgets, mounted after the first frame
        "tui.widgets.controls",
        "tui.widgets.breakdown",
        "tui.widgets.context_chart",
        "tui.widgets.command_lines_view",
        "tui.widgets.measured_panel",
        "tui.widgets.ranks_panel",
    )
    early = sorted(m for m in loaded if m.startswith(later))
    assert early == []


def test_the_first_frame_shows_the_answer_and_the_body_follows(tmp_path: Path) -> None:
    frame = first_frame(tmp_path)
    # The verdict, the total and the model are in the first frame...
    assert frame["summary"].startswith(" FITS  8,192 tokens · total 7.28 GiB of 76.80 GiB")
    assert "Meta-Llama-3.1-8B-Instruct-4bit" in frame["summary"]
    assert {"StatusLine", "SummaryLine", "KeyFooter"} <= set(frame["widgets"])
    body = {"ModelList", "Controls", "Breakdown", "ContextChart", "CommandLinesView"}
    assert body & set(frame["widgets"]) == set()
    # ...and the body is in once the app is ready (keys wait for it).
    assert body <= set(frame["widgets_after"])
