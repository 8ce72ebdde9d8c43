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

Then `fit --hub` (`--fit-repos 60 --latency-ms 50`): sixty small repos served with
50 ms added to every request, listed once, and read two ways with the stores empty:
`core.fit.hub.read_exact` (bounded concurrency; the time to the first exact row and
to the last) and one by one (`read_hub_model` then the same rows, repo after repo).
The bound rows need the listing only: its time is the time to the first (≈) row.

    python scripts/bench_hub.py [--runs 5] [--fit-repos 60] [--latency-ms 50]
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
from core.catalog.resolve import resolve_model
from core.hub.remote import HubOptions
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
    parser.add_argument("--fit-repos", type=int, default=60)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    one_repo(args)
    fit_hub(args)
    return 0


def fit_hub(args: argparse.Namespace) -> None:
    """`fit --hub`'s reads at a latency: concurrent against one by one, same run."""
    from core.answer.quantization import Quantization
    from core.catalog.resolve import hub_read_entry
    from core.estimate.estimate import QuantHint
    from core.fit.hub import read_exact
    from core.fit.models import FitReader
    from core.hub.listing import ListingQuery, list_hub
    from core.hub.remote import HubOptions, read_hub_model
    from tests.core.hub.hub_fit_repos import AUTHOR, publish_sixty, repo_files
    from tui.cli import build_parser
    from tui.commands.shared.estimate_args import question_from_args

    tmp = Path(tempfile.mkdtemp(prefix="vramscope-bench-fit-hub-"))
    hub = FakeHub().start()
    try:
        publish_sixty(hub, [repo_files(i) for i in range(args.fit_repos)])
        hub.listing.page_size = 25
        os.environ.update(
            HF_ENDPOINT=hub.url,
            XDG_CACHE_HOME=str(tmp / "xdg"),
            HF_HOME=str(tmp / "hf-home"),
            HF_HUB_CACHE=str(tmp / "hf-home" / "hub"),
            NO_PROXY="127.0.0.1,localhost",
        )
        os.environ.pop("HF_HUB_OFFLINE", None)
        flags = ["fit", "--backend", "cpu", "--memory-limit", "8GB", "--max-tokens", "8192"]
        question = question_from_args(
            build_parser().parse_args(flags), QuantHint.DEFAULT, identify=False
        ).question
        quants = (Quantization.STORED,)
        query = ListingQuery(author=AUTHOR, limit=args.fit_repos)
        hub.delay_s = args.latency_ms / 1000

        def clear() -> None:
            shutil.rmtree(tmp / "xdg" / "vramscope" / "hub", ignore_errors=True)
            shutil.rmtree(tmp / "hf-home", ignore_errors=True)

        def concurrent() -> tuple[float, float, float]:
            clear()
            start = time.perf_counter()
            listing = list_hub(query, refresh=True)
            listed = time.perf_counter() - start
            first: list[float] = []

            def on_rows(*_: object) -> None:
                if not first:
                    first.append(time.perf_counter() - start)

            read_exact(listing, question, quants, on_rows, timeout_s=30)
            assert first
            return listed, first[0], time.perf_counter() - start

        def one_by_one() -> tuple[float, float]:
            from core.answer.fit import model_rows

            clear()
            start = time.perf_counter()
            listing = list_hub(query, refresh=True)
            first = 0.0
            for listed in listing.models:
                read = read_hub_model(listed.repo_id, HubOptions(timeout_s=30))
                entry = hub_read_entry(read.repo_id, read.commit, read.path)
                model_rows(FitReader(None).read(entry, what_ifs_too=False), quants, question)
                first = first or time.perf_counter() - start
            return first, time.perf_counter() - start

        runs = max(1, min(args.runs, 3))
        conc = [concurrent() for _ in range(runs)]
        seq = [one_by_one() for _ in range(runs)]
        listed_s = statistics.median(c[0] for c in conc)
        first_s = statistics.median(c[1] for c in conc)
        all_s = statistics.median(c[2] for c in conc)
        seq_first = statistics.median(s[0] for s in seq)
        seq_all = statistics.median(s[1] for s in seq)
        print(
            f"fit --hub, {args.fit_repos} repos, {args.latency_ms:g} ms per request, "
            f"median of {runs} runs, stores empty each run:"
        )
        print(f"  listing (every ≈ bound row):   {listed_s * 1e3:8.1f} ms")
        print(f"  concurrent: first exact row    {first_s * 1e3:8.1f} ms, all rows {all_s:6.2f} s")
        print(
            f"  one by one: first exact row    {seq_first * 1e3:8.1f} ms, all rows {seq_all:6.2f} s"
        )
        print(
            f"  ratio one by one / concurrent, all rows: {seq_all / all_s:.1f}x "
            f"(target >= 5x); first row (≈) {listed_s:.2f} s (target < 1 s)"
        )
    finally:
        hub.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def one_repo(args: argparse.Namespace) -> None:
    """The one-repo figures (the module's first part)."""
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


if __name__ == "__main__":
    raise SystemExit(main())
