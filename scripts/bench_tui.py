"""The explorer's speed: cold start to the first painted frame, and key press to breakdown.

Prints figures against their targets; asserts nothing (tests never time things).

1. Cold start: `vramscope explore` in a fresh process on a pseudo-terminal, timed
   from just before the process starts to the first bytes of the first frame
   (and, separately, to the frame that shows the estimate), then `q`. The child
   also reports whether torch was ever imported. Best and median of several runs.
2. Key press: the real app (headless, 160x48), token slider focused; each of 100
   presses alternates right/left. Timed from posting the key event to the
   breakdown receiving the new estimate (app-side), and to the end of the
   next screen update that paints it.

`--against DIR` also starts the explorer of another checkout (for example a
`git worktree add --detach /tmp/base main`), in turns with this one, and prints
both and their ratio: on a shared machine only figures from the same run compare.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COLD_RUNS = 5
PRESSES = 100
COLD_TARGET_S = 0.5
KEY_TARGET_S = 0.016

CHILD = """
import atexit, sys
flag = sys.argv[1]
atexit.register(lambda: open(flag, "w").write(str("torch" in sys.modules)))
sys.argv = ["vramscope", "explore", "--preset", "gfx1151"]
from tui.cli import main
sys.exit(main())
"""


def _read_until(fd: int, markers: list[bytes], deadline: float) -> dict[bytes, float]:
    """Read the terminal until every marker has appeared; when each first did."""
    seen: dict[bytes, float] = {}
    buffer = b""
    while len(seen) < len(markers) and time.perf_counter() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        now = time.perf_counter()
        buffer += chunk
        for marker in markers:
            if marker not in seen and marker in buffer:
                seen[marker] = now
    return seen


def cold_start_once(pycache: str | None, root: Path = ROOT) -> tuple[float, float, str]:
    """(seconds to first frame, seconds to the estimate on screen, torch imported?).

    `pycache`: a folder for compiled bytecode, kept between runs, as an installed copy
    has (pip compiles at install); None compiles every module at every start, as
    PYTHONDONTWRITEBYTECODE=1 (set on the development machines) does.
    """
    with tempfile.TemporaryDirectory() as tmp:
        flag = Path(tmp) / "torch"
        master, slave = pty.openpty()
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="160", LINES="48")
        env.pop("NO_COLOR", None)
        if pycache is None:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pycache
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(flag)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=root,  # `python -c` puts the working directory first: this checkout's tui
            env=env,
            close_fds=True,
        )
        os.close(slave)
        try:
            seen = _read_until(master, [b"vramscope", b"FITS"], start + 20)
            os.write(master, b"q")
            deadline = time.perf_counter() + 10
            while proc.poll() is None and time.perf_counter() < deadline:
                _read_until(master, [b"\0never"], time.perf_counter() + 0.05)  # keep draining
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            os.close(master)
        first = seen.get(b"vramscope", float("nan")) - start
        ready = seen.get(b"FITS", float("nan")) - start
        return first, ready, flag.read_text() if flag.exists() else "unknown"


def bench_cold_start(runs: int, against: Path | None) -> None:
    roots = {"this checkout": ROOT} | ({f"against {against}": against} if against else {})
    with tempfile.TemporaryDirectory() as pycache:
        caches = {name: f"{pycache}/{i}" for i, name in enumerate(roots)}
        for name, root in roots.items():
            cold_start_once(caches[name], root)  # fills the cache, as an install does
        for how, compiled in (
            ("with compiled bytecode (an installed copy)", True),
            ("compiling every module (PYTHONDONTWRITEBYTECODE=1)", False),
        ):
            results: dict[str, list[tuple[float, float, str]]] = {name: [] for name in roots}
            for _ in range(runs):  # in turns, so both see the same load
                for name, root in roots.items():
                    cache = caches[name] if compiled else None
                    results[name].append(cold_start_once(cache, root))
            _report_cold_start(how, results)


def _report_cold_start(how: str, results: dict[str, list[tuple[float, float, str]]]) -> None:
    medians: dict[str, tuple[float, float]] = {}
    for name, runs in results.items():
        firsts = [r[0] for r in runs]
        readies = [r[1] for r in runs]
        torch = {r[2] for r in runs}
        best, median = min(firsts), statistics.median(firsts)
        medians[name] = (median, statistics.median(readies))
        verdict = "OK" if median <= COLD_TARGET_S else "OVER TARGET"
        print(f"cold start of `vramscope explore` on a pty, {len(runs)} runs, {how}, {name}")
        print(
            f"  to first painted frame   best {best:6.3f} s   median {median:6.3f} s   "
            f"target <= {COLD_TARGET_S:.1f} s   {verdict}"
        )
        print(
            f"  to the estimate painted  best {min(readies):6.3f} s   "
            f"median {statistics.median(readies):6.3f} s   (model read in a background thread)"
        )
        print(f"  torch imported: {', '.join(sorted(torch))}   (must be False)")
    if len(medians) == 2:
        (first, ready), (first_b, ready_b) = medians.values()
        print(
            f"  same run, this / against: first frame {first / first_b:.2f}x, "
            f"estimate painted {ready / ready_b:.2f}x"
        )


async def _key_press_samples() -> tuple[list[float], list[float]]:
    from textual import events

    from tui.app import make_app
    from tui.deps import builtin_deps
    from tui.headless import wait_until_settled
    from tui.model.presets import PRESETS_BY_KEY
    from tui.model.state import LaunchOptions
    from tui.widgets.breakdown import Breakdown

    app = make_app(builtin_deps(PRESETS_BY_KEY["gfx1151"].available()), LaunchOptions())
    marks: dict[str, float] = {}
    to_breakdown: list[float] = []
    to_frame: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until_settled(pilot)
        breakdown = app.screen.query_one(Breakdown)
        shown = breakdown.show_estimate

        def timed_show(view: Any) -> None:
            shown(view)
            marks.setdefault("breakdown", time.perf_counter())

        breakdown.show_estimate = timed_show  # type: ignore[method-assign]
        display = app._display

        def timed_display(screen: Any, update: Any) -> None:
            display(screen, update)
            if "breakdown" in marks:
                marks.setdefault("frame", time.perf_counter())

        app._display = timed_display  # type: ignore[method-assign]
        for i in range(PRESSES):
            marks.clear()
            key = "right" if i % 2 == 0 else "left"
            start = time.perf_counter()
            app.post_message(events.Key(key, None))
            while "frame" not in marks:
                await asyncio.sleep(0.0005)
            to_breakdown.append(marks["breakdown"] - start)
            to_frame.append(marks["frame"] - start)
        assert "torch" not in sys.modules
    return to_breakdown, to_frame


def bench_key_press() -> None:
    to_breakdown, to_frame = asyncio.run(_key_press_samples())
    median = statistics.median(to_breakdown)
    verdict = "OK" if median <= KEY_TARGET_S else "OVER TARGET"
    print(f"\ntoken-slider key press, {PRESSES} presses, 160x48, headless")
    print(
        f"  to the updated breakdown  median {median * 1e3:6.2f} ms   "
        f"p90 {statistics.quantiles(to_breakdown, n=10)[-1] * 1e3:6.2f} ms   "
        f"target <= {KEY_TARGET_S * 1e3:.0f} ms   {verdict}"
    )
    print(
        f"  to the painted frame      median {statistics.median(to_frame) * 1e3:6.2f} ms   "
        "(Textual paints at most 60 frames a second)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=COLD_RUNS, help="cold starts of each kind")
    parser.add_argument("--against", type=Path, help="another checkout to start in turns")
    parser.add_argument("--cold-only", action="store_true", help="skip the key-press part")
    args = parser.parse_args()
    print(f"vramscope explorer benchmark, Python {sys.version.split()[0]}\n")
    bench_cold_start(args.runs, args.against)
    if args.cold_only:
        return 0
    bench_key_press()
    return 0


if __name__ == "__main__":
    sys.exit(main())
