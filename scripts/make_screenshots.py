"""Regenerate screenshots/ (SVG and PNG) from the real explorer, rendered without a terminal.

Run with `make screenshots`. Every shot uses the built-in profiles and the machine
of mlxcel's worked example (ROCm detected, Radeon 8060S gfx1151 with MLX's
76.80 GiB limit), so the pictures are the same wherever they are made.
The measured shots show mlxcel's published gfx1151 peaks for that model as if
they were runs in the history (a fixed history in a temporary state folder);
they illustrate the screens, they are not measurements of this machine.
PNGs need cairosvg (a dev dependency).
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.backend import Backend  # noqa: E402
from core.catalog.resolve import entry_snapshot, profile_entry  # noqa: E402
from core.estimate.available import AvailableMemory  # noqa: E402
from core.estimate.estimate import Workload, estimate  # noqa: E402
from core.measurement.history import HistoryStore  # noqa: E402
from core.measurement.result import MeasuredPeak  # noqa: E402
from core.measurement.run import MeasuredRun  # noqa: E402
from hip_backend import record_run  # noqa: E402
from tui.deps import GFX1151_MACHINE, builtin_deps  # noqa: E402
from tui.headless import PngUnavailable, render_svg, svg_to_png  # noqa: E402
from tui.model.state import DEFAULT_MODEL, ExplorerState, LaunchOptions  # noqa: E402

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
    measured: bool = False
    """Start with the illustrative history and its last run as the result on screen."""


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
        "explorer-60x20",
        (60, 20),
        caption="At 60x20 the verdict, the total and the model's own name stay in the summary "
        "line; the footer shows the keys that fit whole.",
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
        "two-devices-tp",
        (160, 48),
        LaunchOptions(preset="rx7900xtx", max_tokens=131072),
        press=("d",),
        caption="`d`: the same 131,072 tokens split over two 24 GiB cards with tensor parallel "
        "(mlx-lm's sharding): one column per rank, and the plan fits.",
    ),
    Shot(
        "cuda-backend",
        (120, 40),
        press=("n", "i"),
        caption="On CUDA there is no in-flight term; the budget control stays, inactive, "
        "and says why, as its key `i` does (nothing typed after it lands elsewhere).",
    ),
    Shot(
        "fits-160x48",
        (160, 48),
        LaunchOptions(preset="rx7900xtx"),
        press=("f",),
        caption="`f`: what fits on a 24 GiB Radeon RX 7900 XTX, every built-in model stored "
        "and as mlx-lm's 8/4-bit what-ifs (*), ranked as `vramscope fit` ranks them.",
    ),
    Shot(
        "help-80x24",
        (80, 24),
        press=("question_mark",),
        caption="`?` lists every key and control.",
    ),
    Shot(
        "measured-160x48",
        (160, 48),
        LaunchOptions(max_tokens=4096),
        caption="`m`: a measured peak beside the estimate for the same run (4096 tokens, "
        "1024 MiB), its margin and ✓; earlier runs are ◆ points on the chart.",
        measured=True,
    ),
    Shot(
        "history-140x30",
        (140, 30),
        press=("H",),
        caption="`H`: every past run, newest first; `e` writes the Estimate against peak table.",
        measured=True,
    ),
)

SNAPSHOTS = ROOT / "tests" / "tui" / "__snapshots__"
FROM_SNAPSHOTS = (
    (
        "hub-scope-160x48",
        (160, 48),
        SNAPSHOTS / "test_hub_fits_view" / "TestHubScopeSnapshots.test_hub_scope_160x48.svg",
        "`h` in the Fits view: the Hub's models for the settings on screen, listed then read "
        "(five repos of the suite's local Hub, a 76.80 GiB budget).",
    ),
    (
        "hub-scope-80x24",
        (80, 24),
        SNAPSHOTS / "test_hub_fits_view" / "TestHubScopeSnapshots.test_hub_scope_80x24.svg",
        "The Hub scope at 80x24: the answer columns whole, every key in the footer.",
    ),
    (
        "explorer-gguf-160x48",
        (160, 48),
        SNAPSHOTS / "test_gguf_snapshots" / "TestGgufExplorer.test_gguf_partial_offload_160x48.svg",
        "A GGUF under llama.cpp (a synthesized gemma3, 24 MiB): five of seven layers on the "
        "device, q8_0 caches, two slots; the load split between the device and the host.",
    ),
)
"""Shots of screens that need a Hub or a GGUF file: the snapshot tests draw them against
the suite's local Hub server and a synthesized GGUF (`make snapshot-update` redraws
them); here they become PNGs."""

PUBLISHED_PEAKS = ((640, 256, 518), (640, 1024, 614), (640, 4096, 923), (4096, 256, 602))
PUBLISHED_PEAKS += ((4096, 4096, 1011), (4096, 1024, 695))
"""mlxcel's printed gfx1151 peaks for the default model: (context, budget MiB, centi-GB)."""


def illustrative_history(available: AvailableMemory) -> list[MeasuredPeak]:
    """The published peaks as runs of pp(context - 128) / tg128, with their estimates."""
    snapshot = entry_snapshot(profile_entry(DEFAULT_MODEL), DEFAULT_MODEL)
    runs = []
    for hour, (context, budget, centi_gb) in enumerate(PUBLISHED_PEAKS, start=9):
        settings = replace(
            ExplorerState().settings(available), backend=Backend.ROCM, inflight_mib=budget
        )
        runs.append(
            MeasuredPeak(
                model=DEFAULT_MODEL,
                device_kind="rocm",
                device_name="Radeon 8060S",
                peak_bytes=centi_gb * 10**7,
                peak_kind="torch allocator peak of live tensors (reset before the load)",
                inflight_mib=budget,
                prompt_tokens=context - 128,
                gen_tokens=128,
                synthetic_weights=False,
                load_seconds=3.12,
                prefill_tokens_per_s=1402.7,
                decode_tokens_per_s=38.6,
                torch_version="2.13.0",
                runtime_version="6.4",
                arch="gfx1151",
                estimate_bytes=estimate(snapshot, Workload(context), settings).total_bytes,
                timestamp=f"2026-11-29T{hour:02d}:00:00+00:00",
            )
        )
    return runs


def history_world(root: Path, available: AvailableMemory) -> tuple[HistoryStore, MeasuredPeak]:
    """The illustrative history under a temporary HOME (so the screen shows `~/...`)."""
    os.environ["HOME"] = str(root)
    os.environ["XDG_STATE_HOME"] = str(root / ".local" / "state")
    store = HistoryStore.default()
    runs = illustrative_history(available)
    for run in runs:
        record_run(MeasuredRun((run,)))  # the product's one history writer
    return store, runs[-1]


def main() -> int:
    deps = builtin_deps(GFX1151_DETECTED, GFX1151_MACHINE)
    home = tempfile.TemporaryDirectory(prefix="vramscope-shots-")
    store, last = history_world(Path(home.name), GFX1151_DETECTED)
    measured_deps = builtin_deps(GFX1151_DETECTED, GFX1151_MACHINE, history=store)
    OUT.mkdir(exist_ok=True)
    for shot in SHOTS:
        if shot.measured:
            svg = render_svg(measured_deps, shot.options, shot.size, shot.press, measured=last)
        else:
            svg = render_svg(deps, shot.options, shot.size, shot.press)
        (OUT / f"{shot.name}.svg").write_text(svg, encoding="utf-8")
        try:
            png = svg_to_png(svg, shot.size[0] * PNG_PX_PER_COLUMN)
        except PngUnavailable as exc:
            print(f"{exc}: SVG only", file=sys.stderr)
        else:
            (OUT / f"{shot.name}.png").write_bytes(png)
        print(f"screenshots/{shot.name}.svg/.png  {shot.size[0]}x{shot.size[1]}  {shot.caption}")
    home.cleanup()
    for name, size, source, caption in FROM_SNAPSHOTS:
        svg = source.read_text(encoding="utf-8")
        (OUT / f"{name}.svg").write_text(svg, encoding="utf-8")
        try:
            (OUT / f"{name}.png").write_bytes(svg_to_png(svg, size[0] * PNG_PX_PER_COLUMN))
        except PngUnavailable as exc:
            print(f"{exc}: SVG only", file=sys.stderr)
        print(f"screenshots/{name}.svg/.png  {size[0]}x{size[1]}  {caption}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
