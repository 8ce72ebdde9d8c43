"""Time and peak memory of `vramscope calibrate --rows` on a 10^6-row CSV (#29 item 8).

    .venv/bin/python scripts/bench_calibration_csv.py [--rows N] [--tree DIR ...]

Writes one CSV (3 built-in models, contexts and budgets varied, a comment line every
1,000 rows), then runs the real command in a fresh interpreter for each source tree
given (default: this checkout; pass an extracted older commit to compare), and
prints wall seconds and the child's peak RSS (`wait4`'s ru_maxrss). The reference
measured in the same run is the time and RSS of a child that only reads the file's
bytes and splits its lines, so figures from a loaded machine can be compared as
ratios. Older trees capped a runs file at 16 MiB: the child lifts that cap first, so
the comparison is of the reading and fitting, not of the refusal.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = (
    "google/gemma-2-2b-it",
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
)
HEADER = "model,context,inflight_mib,backend,peak_bytes,engine,device\n"

CALIBRATE = """
import sys
import core.calibration.sources as sources
sources.CSV_SIZE_CAP = 1 << 34  # older trees refused more than 16 MiB
from tui.cli import main
code = main(["calibrate", "--rows", sys.argv[1]])
sys.exit(code)
"""

READ_ONLY = """
import sys
with open(sys.argv[1], "rb") as fh:
    print(sum(1 for _ in fh))
"""


def write_csv(path: Path, rows: int) -> None:
    """`rows` runs of the 3 models, peaks well above mlxcel's terms (so every run fits)."""
    with path.open("w", encoding="utf-8") as fh:
        fh.write("# a runs file of the benchmark\n" + HEADER)
        for n in range(rows):
            if n % 1000 == 0:
                fh.write(f"# block {n // 1000}\n")
            model = MODELS[n % 3]
            context = 512 + 128 * (n % 64)
            inflight = (0, 256, 1024)[n % 5 % 3]
            peak = 30_000_000_000 + (n * 7919) % 1_000_000_000
            fh.write(f"{model},{context},{inflight},rocm,{peak},mlx,gfx1151\n")


def run(script: str, tree: Path, csv: Path, state: Path) -> tuple[float, int, int, str]:
    """(wall seconds, peak RSS in bytes, exit status, last stderr line) of one child."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "XDG_STATE_HOME": str(state),
        "XDG_CACHE_HOME": str(state / "cache"),
    }
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(csv)],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert child.stderr is not None
    err = child.stderr.read().decode(errors="replace").strip().splitlines()
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    return wall, usage.ru_maxrss * 1024, child.returncode, err[-1] if err else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--tree", type=Path, action="append", default=None)
    args = parser.parse_args()
    trees = args.tree or [ROOT]
    with tempfile.TemporaryDirectory(prefix="vramscope-bench-") as tmp:
        csv = Path(tmp) / "runs.csv"
        write_csv(csv, args.rows)
        size = csv.stat().st_size
        print(f"CSV: {args.rows:,} rows, {size:,} bytes")
        ref_wall, ref_rss, _, _ = run(READ_ONLY, ROOT, csv, Path(tmp) / "ref")
        print(f"reference (read and split the lines): {ref_wall:.2f} s, {ref_rss / 2**20:.0f} MiB")
        for n, tree in enumerate(trees):
            wall, rss, code, last = run(CALIBRATE, tree, csv, Path(tmp) / f"state{n}")
            print(
                f"{tree}: exit {code}, {wall:.2f} s ({wall / ref_wall:.1f}x the reference), "
                f"peak RSS {rss / 2**20:.0f} MiB ({rss / ref_rss:.1f}x)"
            )
            if code != 0:
                print(f"  {last}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
