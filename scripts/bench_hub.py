"""A Hub read beside a local read of the same files (prints figures, asserts nothing).

Serves the built-in Llama-3.1-8B-Instruct profile (four BF16 shards and an index) as
header-only files from the test suite's local Hub (`tests/hub_server.py`, on
127.0.0.1), then times, in this one process:

- the remote read: `resolve_model` with the Hub store empty (model_info, config and
  index as capped GETs, four ranged header reads), and the bytes the server
  sent;
- a repeat online read of the same commit (one model_info call, then the store);
- an offline read from the store (HF_HUB_OFFLINE=1);
- the local read of the same files from a folder.

Ratios are taken within the run. Loopback has no latency: on the real Hub each of
the ~8 requests adds a round trip, so the remote figure is a floor.

    python scripts/bench_hub.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.catalog.model_dir import read_model_dir
from core.catalog.profiles import load_profile
from core.catalog.resolve import HubOptions, resolve_model
from tests.hub_server import FakeHub, sparse_from_folder
from tests.model_writers import write_skeleton

PROFILE = "meta-llama/Llama-3.1-8B-Instruct"
REPO = "bench-org/Llama-3.1-8B-Instruct"


def timed(fn: Callable[[], object], runs: int, before: Callable[[], None] | None = None) -> float:
    """Median seconds of `runs` calls (`before` runs untimed ahead of each)."""
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="vramscope-bench-hub-"))
    try:
        local = write_skeleton(load_profile(PROFILE), tmp / "local")
        hub = FakeHub().start()
        hub.add(REPO, sparse_from_folder(local))
        os.environ.update(
            HF_ENDPOINT=hub.url,
            XDG_CACHE_HOME=str(tmp / "xdg"),
            HF_HOME=str(tmp / "hf-home"),
            HF_HUB_CACHE=str(tmp / "hf-home" / "hub"),
            NO_PROXY="127.0.0.1,localhost",
        )
        os.environ.pop("HF_HUB_OFFLINE", None)
        options = HubOptions()

        def clear() -> None:  # a repo never read: empty Hub store and HF cache
            shutil.rmtree(tmp / "xdg", ignore_errors=True)
            shutil.rmtree(tmp / "hf-home", ignore_errors=True)
            hub.bytes_sent = 0
            hub.requests.clear()

        remote = timed(lambda: resolve_model(REPO, hub=options), args.runs, clear)
        sent, requests = hub.bytes_sent, len(hub.requests)
        snap = resolve_model(REPO, hub=options)
        again = timed(lambda: resolve_model(REPO, hub=options), args.runs)
        os.environ["HF_HUB_OFFLINE"] = "1"
        offline = timed(lambda: resolve_model(REPO, hub=options), args.runs)
        on_disk = timed(lambda: read_model_dir(local), args.runs)
        hub.stop()
        weights = snap.weights.bytes
        assert weights == read_model_dir(local).weights.bytes
        print(f"{REPO}: {weights:,} bytes of weights, 4 shards; median of {args.runs} runs")
        print(
            f"  remote read, never read before: {remote * 1e3:8.1f} ms, {requests} requests, "
            f"{sent:,} bytes fetched ({sent / weights:.4%} of the weights)"
        )
        print(f"  remote read, same commit again: {again * 1e3:8.1f} ms (one model_info call)")
        print(f"  offline, from the Hub store:    {offline * 1e3:8.1f} ms")
        print(f"  local read of the same files:   {on_disk * 1e3:8.1f} ms")
        print(
            f"  ratios to the local read: remote {remote / on_disk:.1f}x, "
            f"again {again / on_disk:.1f}x, offline {offline / on_disk:.1f}x"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
