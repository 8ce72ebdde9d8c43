"""`vramscope screenshot OUT.svg`: the explorer's screen, rendered without a terminal."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from core.errors import UsageError
from tui.commands.registry import help_line
from tui.commands.shared.estimate_args import launch_options
from tui.commands.shared.flags import add_launch_flags
from tui.commands.shared.output import check_out_path, write_out
from tui.out_of_memory import check_room_to_start

DEFAULT_SIZE = (120, 40)
PNG_WIDTH_PER_COLUMN = 12


def parse_size(text: str) -> tuple[int, int]:
    """`WxH` in terminal cells, at least 40x12."""
    m = re.fullmatch(r"\s*(\d{1,4})\s*[xX]\s*(\d{1,4})\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 120x40, got '{text}'")
    width, height = int(m.group(1)), int(m.group(2))
    if width < 40 or height < 12:
        raise argparse.ArgumentTypeError(f"at least 40x12 cells, got {width}x{height}")
    return width, height


def register(sub: Any) -> None:
    """Add the `screenshot` parser."""
    p = sub.add_parser(
        "screenshot",
        help=help_line("screenshot"),
        description="Render the explorer's screen, once it has read the model, to OUT "
        "(.svg, or .png with cairosvg installed).",
    )
    p.add_argument("out", metavar="OUT", type=Path, help="file to write (.svg or .png)")
    add_launch_flags(p)
    p.add_argument(
        "--size",
        type=parse_size,
        default=DEFAULT_SIZE,
        metavar="WxH",
        help=f"terminal size in cells (default {DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]})",
    )
    p.add_argument(
        "--press",
        default="",
        metavar="KEYS",
        help="comma-separated keys to press first, e.g. 'k,n' or 'question_mark'",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Render and write the screenshot."""
    options = launch_options(args)
    out: Path = args.out
    if out.suffix.lower() not in (".svg", ".png"):
        raise UsageError("OUT", f"'{out}' must end in .svg or .png")
    check_out_path("OUT", out)  # before spending a second on the render
    check_room_to_start("the explorer's screenshot")  # before Textual and its threads
    from tui.deps import default_deps
    from tui.headless import PngUnavailable, check_png, render_svg, svg_to_png

    if out.suffix.lower() == ".png":
        try:
            check_png()  # before the render, as the path check
        except PngUnavailable as exc:
            raise UsageError("OUT", str(exc)) from None
    press = [k.strip() for k in args.press.split(",") if k.strip()]
    svg = render_svg(default_deps(options.models_dirs), options, args.size, press)
    if out.suffix.lower() == ".png":
        try:
            data = svg_to_png(svg, args.size[0] * PNG_WIDTH_PER_COLUMN)
        except PngUnavailable as exc:
            raise UsageError("OUT", str(exc)) from None
    else:
        data = svg.encode("utf-8")
    write_out("OUT", out, data)
    print(out)
    return 0
