"""Time and peak memory of `vramscope calibrate --rows` on a 10^6-row CSV (#29 item 8).

    .venv/bin/python scripts/bench_calibration_csv.py [--rows N] [--before REV] [--tree DIR ...]

Writes one CSV (3 built-in models, contexts and budgets varied, a comment line every
1,000 rows), then runs the real command in a fresh interpreter for each source tree:
`--before REV` first (that commit of this repository, extracted with `git archive`,
e.g. `--before main`), then each `--tree` (default: this checkout). It prints wall
seconds and the child's peak RSS (`wait4`'s ru_maxrss), each as a ratio to a
reference measured in the same run (a child that only reads the file's bytes and
splits its lines) and to the first tree, and whether every tree printed and saved the
same calibration (the saved file's `fitted_at` and the state folder aside). Figures
from a loaded machine compare as ratios; the load average is printed beside them.
Older trees capped a runs file at 16 MiB: the child lifts that cap first, so the
comparison is of the reading and fitting, not of the refusal.
"""

from __future__ import annotations

import argparse
import json
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


class Child:
    """What one child did: wall seconds, peak RSS in bytes, exit status, its output."""

    def __init__(self, wall: float, rss: int, code: int, out: str, err: str) -> None:
        self.wall, self.rss, self.code, self.out, self.err = wall, rss, code, out, err


def run(script: str, tree: Path, csv: Path, state: Path) -> Child:
    """Run `script` on `csv` in a fresh interpreter importing from `tree`."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "XDG_STATE_HOME": str(state),
        "XDG_CACHE_HOME": str(state / "cache"),
    }
    start = time.perf_counter()
    state.mkdir(parents=True)
    with (state / "out").open("w+b") as out_fh, (state / "err").open("w+b") as err_fh:
        child = subprocess.Popen(
            [sys.executable, "-c", script, str(csv)],
            cwd=tree,
            env=env,
            stdout=out_fh,
            stderr=err_fh,
        )
        _pid, status, usage = os.wait4(child.pid, 0)  # reaps it: its own peak RSS
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out = (state / "out").read_bytes()
        err = (state / "err").read_bytes()
    saved = state / "vramscope" / "calibration.json"
    text = out.decode(errors="replace").replace(str(state), "STATE")
    if saved.exists():
        doc = json.loads(saved.read_text())
        for cal in doc.get("calibrations", []):
            cal.pop("fitted_at", None)
        text += json.dumps(doc, sort_keys=True)
    return Child(wall, usage.ru_maxrss * 1024, child.returncode, text, err.decode(errors="replace"))


def extract(rev: str, into: Path) -> Path:
    """`rev` of this repository as a source tree under `into` (piped through `tar`: held
    here, the archive would count in every child's peak RSS, which starts as a copy of
    this process's)."""
    into.mkdir()
    archive = subprocess.Popen(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev], stdout=subprocess.PIPE
    )
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.stdout is not None:
        archive.stdout.close()
    if archive.wait() != 0:
        raise SystemExit(f"git archive {rev} failed")
    return into


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--before", metavar="REV", help="a commit to compare (e.g. main)")
    parser.add_argument("--tree", type=Path, action="append", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vramscope-bench-") as tmp:
        trees: list[tuple[str, Path]] = []
        if args.before:
            trees.append((f"{args.before} (before)", extract(args.before, Path(tmp) / "before")))
        trees += [(f"{t} (after)" if args.before else str(t), t) for t in args.tree or [ROOT]]
        csv = Path(tmp) / "runs.csv"
        write_csv(csv, args.rows)
        print(f"CSV: {args.rows:,} rows, {csv.stat().st_size:,} bytes; {load()}")
        ref = run(READ_ONLY, ROOT, csv, Path(tmp) / "ref")
        print(f"reference (read and split the lines): {ref.wall:.2f} s, {ref.rss / 2**20:.0f} MiB")
        first: Child | None = None
        for n, (name, tree) in enumerate(trees):
            child = run(CALIBRATE, tree, csv, Path(tmp) / f"state{n}")
            line = (
                f"{name}: exit {child.code}, {child.wall:.2f} s "
                f"({child.wall / ref.wall:.1f}x the reference), peak RSS "
                f"{child.rss / 2**20:.0f} MiB ({child.rss / ref.rss:.1f}x)"
            )
            if first is not None:
                same = "same output" if child.out == first.out else "OUTPUT DIFFERS"
                line += (
                    f"; {first.wall / child.wall:.1f}x faster and "
                    f"{first.rss / child.rss:.1f}x less memory than the first, {same}"
                )
            print(line)
            if child.code != 0:
                print(f"  {child.err.strip().splitlines()[-1:]}")
            first = first or child
        print(f"after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
