"""What `vramscope explore` has imported when its first frame is written.

The first frame shows the estimate (`tui.controllers.first_reads`); the model list,
the history, the calibrations, the other commands, the help and the palette come
after it. An import added to that path slows every start: this pins what stays out.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from tui.commands.registry import COMMANDS

ROOT = Path(__file__).resolve().parents[2]

# `vramscope explore` through the real `main` on a pseudo-terminal (it refuses to open
# without one), with the app run headless; the modules are written at its first frame.
CHILD = """
import asyncio, json, sys
from tui.app import VramscopeApp
out = sys.argv[1]
seen = []
display = VramscopeApp._display

def first(self, screen, renderable):
    if renderable is not None and not seen:
        seen.append(sorted(sys.modules))
    display(self, screen, renderable)

async def headless(app):
    async with app.run_test(size=(160, 48)) as pilot:
        while not seen:
            await pilot.pause()
    with open(out, "w") as f:
        json.dump(seen[0], f)

VramscopeApp._display = first
VramscopeApp.run = lambda self, **kw: asyncio.run(headless(self))
from tui.cli import main
sys.exit(main(["explore", "--preset", "gfx1151"]))
"""


def first_frame_modules(tmp_path: Path) -> set[str]:
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
    return set(json.loads(out.read_text()))


def test_the_first_frame_waits_for_no_other_commands_or_later_reads(tmp_path: Path) -> None:
    loaded = first_frame_modules(tmp_path)
    assert "tui.screens.explorer_screen" in loaded  # the frame was the explorer's
    others = {f"tui.commands.{c.module}" for c in COMMANDS if c.name != "explore"}
    assert loaded & others == set()
    later = (
        "torch",
        "hip_backend",
        "core.calibration",  # the calibrations are read after the first frame
        "core.fit_models",  # the Fits view
        "core.estimate.report",  # inspect's banner
        "core.parallel.report",
        "tui.controllers.ranks",  # Devices > 1
        "tui.screens.history_screen",
        "tui.screens.help_screen",
        "tui.screens.palette",
        "tui.screens.fits_screen",
    )
    early = sorted(m for m in loaded if m.startswith(later))
    assert early == []
