"""Regenerate screenshots/ (SVG and PNG) from the real explorer, rendered without a terminal.

Run with `make screenshots`. Every shot uses the built-in profiles and the machine
of mlxcel's worked example (ROCm detected, Radeon 8060S gfx1151 with MLX's
76.80 GiB limit), so the pictures are the same wherever they are made.
PNGs need cairosvg (a dev dependency).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.available import AvailableMemory  # noqa: E402
from tui.deps import GFX1151_MACHINE, builtin_deps  # noqa: E402
from tui.headless import PngUnavailable, render_svg, svg_to_png  # noqa: E402
from tui.state import LaunchOptions  # noqa: E402

OUT = ROOT / "screenshots"
GFX1151_DETECTED = AvailableMemory(82_463_372_083, "MLX device limit: 80% of amdgpu VRAM (card1)")
"""What `resolve_available_memory` reports on that machine (96 GiB of VRAM in sysfs)."""
PNG_PX_PER_COLUMN = 12


@dataclass(frozen=True)
class Shot:
    """One screenshot: a name, a terminal size, starting flags and keys to press."""

    name: str
    size: tuple[int, int]
    options: LaunchOptions = field(default_factory=LaunchOptions)
    press: tuple[str, ...] = ()
    caption: str = ""


SHOTS = (
    Shot(
        "explorer-160x48",
        (160, 48),
        caption="The explorer at 160x48: mlxcel's worked example on gfx1151, every term with "
        "its bytes, the Backend in-flight row, the largest context and budget that fit.",
    ),
    Shot(
        "explorer-80x24",
        (80, 24),
        caption="At 80x24 the controls and the whole breakdown fit on one screen.",
    ),
    Shot(
        "inflight-4096",
        (120, 40),
        press=("i", "right", "right", "right", "right"),
        caption="The in-flight budget at 4096 MiB: the Backend in-flight row and the total "
        "grow by exactly 3 GiB.",
    ),
    Shot(
        "does-not-fit",
        (120, 40),
        LaunchOptions(preset="rx7900xtx", max_tokens=131072),
        caption="The full 131,072-token context on a 24 GiB Radeon RX 7900 XTX: DOES NOT FIT, "
        "with the overflow, and the largest context that would.",
    ),
    Shot(
        "cuda-backend",
        (120, 40),
        press=("n",),
        caption="On CUDA there is no in-flight term; the budget control stays, inactive, "
        "and says why.",
    ),
    Shot(
        "help-80x24",
        (80, 24),
        press=("question_mark",),
        caption="`?` lists every key and control.",
    ),
)


def main() -> int:
    deps = builtin_deps(GFX1151_DETECTED, GFX1151_MACHINE)
    OUT.mkdir(exist_ok=True)
    for shot in SHOTS:
        svg = render_svg(deps, shot.options, shot.size, shot.press)
        (OUT / f"{shot.name}.svg").write_text(svg, encoding="utf-8")
        try:
            png = svg_to_png(svg, shot.size[0] * PNG_PX_PER_COLUMN)
        except PngUnavailable as exc:
            print(f"{exc}: SVG only", file=sys.stderr)
        else:
            (OUT / f"{shot.name}.png").write_bytes(png)
        print(f"screenshots/{shot.name}.svg/.png  {shot.size[0]}x{shot.size[1]}  {shot.caption}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
