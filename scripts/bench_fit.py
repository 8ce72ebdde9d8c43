"""`vramscope fit` over a Hugging Face cache of many repos, whole process (prints figures).

Builds the cache as scripts/bench_catalog.py does (N repos cycling through the
built-in profiles, header-only safetensors over sparse data), then times the whole
command, `vramscope fit --json` with all three quantizations, in new processes:
cold (`--no-cache`: every folder read afresh) and warm (the catalog's on-disk cache
filled by a first run). Target: under 1 s warm for 500 repos.

Then the explorer's Fits view over the same cache, in this process, headless
(`--view-only` runs this part alone): from pressing `f` on the settled explorer to
the first frame painted with rows in the table (target 100 ms), and to the last
row, with the fit cache cold (a fresh `XDG_CACHE_HOME`) and warm; beside it, in
the same run, the first frame of a bare Textual app (one Static) as a reference.

    python scripts/bench_fit.py [--repos 500] [--runs 3] [--view-only [--warm-only]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_catalog import build_cache  # noqa: E402

if TYPE_CHECKING:
    from textual.pilot import Pilot

VIEW_TARGET_S = 0.100
SIZE = (160, 48)


async def _bare_first_frame() -> float:
    """Seconds from starting a bare Textual app (one Static) to its first frame: Textual
    posts `Ready` once the first frame is out."""
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    marks: list[float] = []

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("hello")

        def on_ready(self) -> None:
            marks.append(time.perf_counter())

    app = Bare()
    start = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        while not marks:
            await pilot.pause()
    return marks[0] - start


async def _fits_view() -> tuple[float, float, int]:
    """(seconds from `f` to the first painted frame with rows, to the last row, rows).

    Textual's public API only: the screen's rows are watched from this task, and once
    they are in, `wait_for_refresh` returns after the frame that paints them."""
    from tui.app import make_app
    from tui.headless import wait_until_settled
    from tui.model.state import LaunchOptions
    from tui.screens.fits_screen import FitsScreen

    app = make_app(options=LaunchOptions(memory_limit=24 * 1024**3))
    marks: dict[str, float] = {}
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_settled(cast("Pilot[object]", pilot))
        start = time.perf_counter()
        app.post_message(events_key("f"))
        while "done" not in marks:
            screen = app.screen
            if isinstance(screen, FitsScreen) and screen.is_mounted:
                reached = {"rows": bool(screen.shown), "done": screen.done}
                new = [mark for mark, now in reached.items() if now and mark not in marks]
                if new:
                    await screen.wait_for_refresh()
                    marks.update(dict.fromkeys(new, time.perf_counter()))
            await asyncio.sleep(0.001)
        screen = app.screen
        assert isinstance(screen, FitsScreen)
        rows = len(screen.shown)
    return marks["rows"] - start, marks["done"] - start, rows


def events_key(key: str) -> Any:
    from textual import events

    return events.Key(key, key)


def bench_view(hub: Path, xdg: Path, runs: int, warm_only: bool = False) -> dict[str, Any]:
    """The Fits view's figures, cold (empty fit cache) then warm, beside a bare app.

    `warm_only` skips the cold samples (minutes for 500 repos on a small CPU) and
    fills the fit cache with one `vramscope fit` process instead of a cold view.
    """
    os.environ.update({"HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"})
    bare = [asyncio.run(_bare_first_frame()) for _ in range(runs)]
    samples = {}
    for cache in ("warm",) if warm_only else ("cold", "warm"):
        os.environ["XDG_CACHE_HOME"] = str(xdg / "view")
        if cache == "warm" and warm_only:
            run_fit({**os.environ, "PYTHONPATH": str(ROOT)})  # fills the fit cache
            samples[cache] = [asyncio.run(_fits_view()) for _ in range(runs)]
        elif cache == "cold":
            samples[cache] = []
            for i in range(runs):  # each cold run gets a cache folder of its own
                os.environ["XDG_CACHE_HOME"] = str(xdg / f"cold-{i}")
                samples[cache].append(asyncio.run(_fits_view()))
        else:
            asyncio.run(_fits_view())  # fills the fit and catalog caches
            samples[cache] = [asyncio.run(_fits_view()) for _ in range(runs)]
    bare_s = min(bare)
    out: dict[str, Any] = {"bare_first_frame_ms": round(bare_s * 1e3, 1)}
    print(f"\nFits view (f) over {samples['warm'][0][2]} rows, headless {SIZE[0]}x{SIZE[1]}:")
    print(f"  bare Textual app, first frame      best {bare_s * 1e3:7.1f} ms (reference)")
    first_f = samples["warm"][0][0]  # this process's first `f`: the view's imports included
    print(f"  warm first f of the process (imports included) {first_f * 1e3:7.1f} ms")
    out["warm_first_f_of_process_ms"] = round(first_f * 1e3, 1)
    for cache, got in samples.items():
        first = min(s[0] for s in got)
        done = min(s[1] for s in got)
        verdict = "OK" if first <= VIEW_TARGET_S else "OVER TARGET"
        print(
            f"  {cache:4} f -> first rows painted   best {first * 1e3:7.1f} ms "
            f"(median {statistics.median(s[0] for s in got) * 1e3:.1f}; "
            f"{first / bare_s:.2f}x the bare first frame; target "
            f"{VIEW_TARGET_S * 1e3:.0f} ms: {verdict}); all rows {done * 1e3:.0f} ms"
        )
        out[f"{cache}_first_rows_ms"] = round(first * 1e3, 1)
        out[f"{cache}_all_rows_ms"] = round(done * 1e3, 1)
    return out


def run_fit(env: dict[str, str], *flags: str) -> tuple[float, int]:
    """Seconds for one whole `vramscope fit --json` process, and its row count."""
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "tui", "fit", "--json", "--memory-limit", "24GB", *flags],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return time.perf_counter() - start, len(json.loads(out)["rows"])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--view-only", action="store_true", help="only the Fits view part")
    parser.add_argument(
        "--warm-only", action="store_true", help="with --view-only: only the warm view samples"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vramscope-bench-fit-") as tmp:
        hub = Path(tmp) / "hub"
        build_cache(hub, args.repos)
        if args.view_only:
            view = bench_view(hub, Path(tmp) / "xdg", args.runs, args.warm_only)
            print(json.dumps(view))
            return 0
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "HF_HUB_CACHE": str(hub),
            "HF_HUB_OFFLINE": "1",
            "XDG_CACHE_HOME": str(Path(tmp) / "xdg"),
        }
        cold = [run_fit(env, "--no-cache") for _ in range(args.runs)]
        run_fit(env)  # fills the catalog's on-disk cache
        warm = [run_fit(env) for _ in range(args.runs)]
        view = bench_view(hub, Path(tmp) / "xdg", args.runs)
    rows = cold[0][1]
    figures = {
        "repos": args.repos,
        "rows": rows,
        "cold_best_s": round(min(t for t, _ in cold), 3),
        "cold_median_s": round(statistics.median(t for t, _ in cold), 3),
        "warm_best_s": round(min(t for t, _ in warm), 3),
        "warm_median_s": round(statistics.median(t for t, _ in warm), 3),
        **view,
    }
    print(
        f"fit over {args.repos} cached repos + built-ins ({rows} rows), whole process: "
        f"cold best {figures['cold_best_s']} s, warm best {figures['warm_best_s']} s"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
