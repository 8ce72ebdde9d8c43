"""`vramscope fit` over a Hugging Face cache of many repos, whole process (prints figures).

Builds the cache as scripts/bench_catalog.py does (N repos cycling through the
built-in profiles, header-only safetensors over sparse data), then times the whole
command, `vramscope fit --json` with all three quantizations, in new processes:
cold (`--no-cache`: every folder read afresh) and warm (the catalog's on-disk cache
filled by a first run). Target: under 1 s warm for 500 repos.

    python scripts/bench_fit.py [--repos 500] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_catalog import build_cache  # noqa: E402


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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vramscope-bench-fit-") as tmp:
        hub = Path(tmp) / "hub"
        build_cache(hub, args.repos)
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
    rows = cold[0][1]
    figures = {
        "repos": args.repos,
        "rows": rows,
        "cold_best_s": round(min(t for t, _ in cold), 3),
        "cold_median_s": round(statistics.median(t for t, _ in cold), 3),
        "warm_best_s": round(min(t for t, _ in warm), 3),
        "warm_median_s": round(statistics.median(t for t, _ in warm), 3),
    }
    print(
        f"fit over {args.repos} cached repos + built-ins ({rows} rows), whole process: "
        f"cold best {figures['cold_best_s']} s, warm best {figures['warm_best_s']} s"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
