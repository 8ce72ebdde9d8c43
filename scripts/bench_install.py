"""From a fresh clone: `make run`'s install to the first screen, and the size of `.venv`.

For each commit asked for (HEAD, and `--ref REF` as the reference measured in the same
run), this clones the repository into a temporary folder, runs the install `make run`
depends on (its first prerequisite, read from `make -pn run`, so an older Makefile is
measured as it was), then draws the explorer's first screen headless
(`vramscope screenshot`, the frame `make run` would show) and `vramscope --version`.
It prints the seconds of each step, the size of `.venv` and the number of installed
distributions, and the ratios against the reference. The pip cache is whatever this
machine has (warm on the development machines); say in results whether it was loaded.

    python3 scripts/bench_install.py [--ref REF] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 45.0
TARGET_MB = 150.0


@dataclass(frozen=True)
class Figures:
    ref: str
    commit: str
    install_s: float
    first_screen_s: float
    version_s: float
    venv_bytes: int
    distributions: int

    @property
    def total_s(self) -> float:
        return self.install_s + self.first_screen_s


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench_install: {' '.join(argv)} failed in {cwd}:\n{done.stderr[-3000:]}")
    return elapsed


def tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            file = Path(dirpath) / name
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def run_prerequisite(clone: Path, env: dict[str, str]) -> str:
    """The first prerequisite of `run` in this clone's Makefile (its install stamp)."""
    database = subprocess.run(
        ["make", "-pn", "run"], cwd=clone, env=env, capture_output=True, text=True
    ).stdout
    match = re.search(r"^run: (\S+)", database, re.MULTILINE)
    if match is None:
        sys.exit(f"bench_install: no `run:` rule with a prerequisite in {clone}/Makefile")
    return match.group(1)


def measure(ref: str, work: Path) -> Figures:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", ref],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    clone = work / commit
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", commit], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env |= {"HOME": str(work / "home"), "XDG_STATE_HOME": str(work / "state")}
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    stamp = run_prerequisite(clone, env)
    install_s = timed(["make", stamp], clone, env)
    vramscope = str(clone / ".venv" / "bin" / "vramscope")
    first_screen_s = timed([vramscope, "screenshot", str(work / f"{commit}.svg")], clone, env)
    version_s = timed([vramscope, "--version"], clone, env)
    listed = subprocess.run(
        [str(clone / ".venv" / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return Figures(
        ref=ref,
        commit=commit,
        install_s=install_s,
        first_screen_s=first_screen_s,
        version_s=version_s,
        venv_bytes=tree_bytes(clone / ".venv"),
        distributions=len([line for line in listed.splitlines() if "==" in line or " @ " in line]),
    )


def report(rows: list[Figures]) -> None:
    load = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(
        f"{'ref':<12} {'commit':<9} {'install s':>9} {'1st screen s':>12} {'total s':>8} "
        f"{'--version s':>11} {'.venv MB':>9} {'dists':>6}"
    )
    for f in rows:
        print(
            f"{f.ref:<12} {f.commit:<9} {f.install_s:9.1f} {f.first_screen_s:12.2f} "
            f"{f.total_s:8.1f} {f.version_s:11.2f} {f.venv_bytes / 2**20:9.0f} {f.distributions:6d}"
        )
    head = rows[0]
    for ref in rows[1:]:
        print(
            f"HEAD / {ref.ref}: total {head.total_s / ref.total_s:.2f}x, "
            f".venv {head.venv_bytes / ref.venv_bytes:.2f}x"
        )
    verdict = "met" if head.total_s < TARGET_S and head.venv_bytes / 2**20 < TARGET_MB else "missed"
    print(f"target (< {TARGET_S:.0f} s to the first screen, < {TARGET_MB:.0f} MB): {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", action="append", default=[], help="a reference commit")
    parser.add_argument("--keep", action="store_true", help="keep the clones (printed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vramscope-install-"))
    try:
        rows = [measure(ref, work) for ref in ["HEAD", *args.ref]]
    finally:
        if args.keep:
            print(f"clones kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
