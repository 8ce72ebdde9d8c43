"""`vramscope fit --hub [QUERY]`: rank the Hub's models for this device.

One listing (`core.hub.listing`, kept an hour), a `≈` bound row per repo, then the
exact rows as each repo's headers arrive (`core.fit.hub.read_exact`). On a terminal
the table is repainted as rows turn exact; progress goes to stderr; `--json` prints
only the final document.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from core import __version__
from core.answer.quantization import Quantization
from core.display_text import clean_text, json_safe
from core.errors import UsageError
from tui.commands.shared.flags import int_at_least

GGUF_WORKERS = 4
"""GGUF repos read at once by `fit --hub` (each reads its quants one after another)."""
LISTING_SORTS = ("downloads", "likes", "updated")
"""The orders the listing is asked in (the table shows them largest first)."""
COLUMN_SORTS = ("model", "quant", "weights", "total", "verdict", "slack", "max-context",
                "trained", "from")  # fmt: skip
"""The table's other columns (the listing is then by downloads)."""
ASCENDING = frozenset({"rank", "model", "quant", "verdict", "from"})
SORT_WORDS = ("rank", *LISTING_SORTS, *COLUMN_SORTS)
"""`--sort`: fit's ranking, a listing order, or any column of the table."""


def add_hub_fit_flags(p: argparse.ArgumentParser) -> None:
    """`--hub [QUERY]` and the listing's flags (`--hub-timeout` is fit's own)."""
    from core.hub.listing import MAX_LIMIT, HubLibrary

    g = p.add_argument_group("the Hub (fit --hub)")
    g.add_argument(
        "--hub",
        nargs="?",
        const="",
        default=None,
        metavar="QUERY",
        help="rank the Hub's models (one listing, then each repo's headers) instead of "
        "the local ones; QUERY searches repo names",
    )
    g.add_argument("--author", default=None, metavar="ORG", help="with --hub: this org's repos")
    g.add_argument(
        "--library",
        choices=[x.value for x in HubLibrary],
        default=None,
        help="with --hub: repos of this library",
    )
    g.add_argument(
        "--sort",
        default=None,
        metavar="rank|downloads|likes|updated|COLUMN",
        help="with --hub: list by downloads, likes or updated and show in that order "
        "(largest first); rank (default): fit's ranking; or a column of the table "
        f"({', '.join(COLUMN_SORTS)}), listed by downloads",
    )
    g.add_argument(
        "--limit",
        type=int_at_least("--limit", 1),
        default=50,
        metavar="N",
        help=f"with --hub: at most N repos (default 50, at most {MAX_LIMIT})",
    )
    g.add_argument(
        "--refresh",
        action="store_true",
        help="with --hub: list again even when the same query was listed within the hour",
    )


def hub_query(args: argparse.Namespace) -> Any:
    """The listing query the flags ask for (UsageError for a bad value)."""
    from core.hub.listing import MAX_LIMIT, HubLibrary, HubSort, ListingQuery

    sort = (args.sort or "downloads").lower()
    if sort not in SORT_WORDS:
        raise UsageError("--sort", f"{clean_text(sort)!r} is not one of {', '.join(SORT_WORDS)}")
    if args.limit > MAX_LIMIT:
        raise UsageError("--limit", f"{args.limit} is over the {MAX_LIMIT}-repo cap")
    return ListingQuery(
        search=args.hub.strip(),
        author=args.author.strip() if args.author else None,
        library=HubLibrary(args.library) if args.library else None,
        sort=HubSort(sort) if sort in LISTING_SORTS else HubSort.DOWNLOADS,
        limit=args.limit,
    )


def _say(line: str) -> None:
    print(f"vramscope: {clean_text(line)}", file=sys.stderr, flush=True)


def run_hub(
    args: argparse.Namespace, question: Any, quantizations: tuple[Quantization, ...]
) -> int:
    """Listing, bounds, exact reads; the table (live on a terminal) or the JSON."""
    from core.fit.hub import HubFitRow, ReadTally, bound_rows, read_exact
    from core.hub.listing import list_hub
    from tui.render.fit_table import fit_heading
    from tui.render.hub_fit_table import hub_sorted, hub_table

    query = hub_query(args)
    listing = list_hub(query, refresh=args.refresh, timeout_s=args.hub_timeout, progress=_say)
    if listing.note:
        _say(listing.note)
    if listing.problem:
        print(f"vramscope: warning: {clean_text(listing.problem)}", file=sys.stderr)
    available = question.device.available.bytes
    # GGUF repos (llama.cpp's files) are each quant a row of llama.cpp's load, below.
    listed_count = len(listing.models)
    gguf_repos = [m for m in listing.models if is_gguf_repo(m, listing.query)]
    if gguf_repos:
        listing = replace(listing, models=tuple(m for m in listing.models if m not in gguf_repos))
    rows: dict[str, list[HubFitRow]] = {r.listed.repo_id: [r] for r in bound_rows(listing)}
    sort = (args.sort or "rank").lower()
    column = sort.upper().replace("-", " ")
    descending = sort not in ASCENDING
    heading = fit_heading(question)
    live = _Live() if sys.stdout.isatty() and not args.json else None

    def table() -> list[str]:
        flat = [r for group in rows.values() for r in group]
        return hub_table(hub_sorted(flat, column, descending), available)

    started = time.monotonic()
    first: list[float] = []

    def progress(tally: ReadTally) -> str:
        done = tally.read + tally.from_store + tally.failed
        return (
            f"vramscope: {len(listing.models)} listed, {tally.read} read, "
            f"{tally.from_store} from the store, {tally.failed} not read "
            f"({done}/{len(listing.models)})"
        )

    def on_rows(listed: Any, got: list[HubFitRow], tally: ReadTally) -> None:
        rows[listed.repo_id] = got
        if not first:
            first.append(time.monotonic() - started)
        if live is not None:
            live.paint([*heading, "", *table()], progress(tally))
        elif sys.stderr.isatty():
            print("\r" + progress(tally), end="", file=sys.stderr, flush=True)

    if live is not None:
        live.paint([*heading, "", *table()], progress(ReadTally()))
    tally = read_exact(
        listing, question, quantizations, on_rows, timeout_s=args.hub_timeout,
        stop=threading.Event(),
    )  # fmt: skip
    gguf = read_gguf_repos(args, question, gguf_repos, tally) if gguf_repos else None
    flat = hub_sorted([r for g in rows.values() for r in g], column, descending)
    if live is not None:  # the last paint first: the lines below it are not repainted
        live.paint(final_lines(flat, heading, available))
    elif sys.stderr.isatty():
        print(file=sys.stderr)
    _say(
        f"{listed_count} listed, {tally.read} read from the Hub "
        f"({max(0, round(tally.bytes_fetched / 1000))} KB), {tally.from_store} from the store, "
        f"{tally.failed} not read, in {time.monotonic() - started:.1f} s"
    )
    for problem in tally.problems[:3]:
        print(f"vramscope: warning: {clean_text(problem)}", file=sys.stderr)
    if len(tally.problems) > 3:
        print(f"vramscope: warning: and {len(tally.problems) - 3} more", file=sys.stderr)
    if args.json:
        document = {
            "vramscope_version": __version__,
            "inputs": {
                "available_bytes": available,
                "backend": question.device.backend.value,
                "max_tokens": args.max_tokens,
                "quantizations": [q.word for q in quantizations],
                "answered_for": question.device.json(),
                "hub": {
                    "endpoint": listing.endpoint,
                    "query": listing.query.words(),
                    "listed_at": listing.date,
                    "from_store": listing.from_store,
                    "problem": listing.problem,
                    "listed": listed_count,
                    "read": tally.read,
                    "answered_from_store": tally.from_store,
                    "not_read": tally.failed,
                    "bytes_fetched": tally.bytes_fetched,
                },
            },
            "rows": [r.json(available) for r in flat],
            # vramscope's, after fit's keys: each GGUF repo's quant files (llama.cpp's load).
            "gguf_rows": [r.json() for r in gguf.rows] if gguf is not None else [],
        }
        print(json.dumps(json_safe(document), indent=2, ensure_ascii=False))
        return 0
    if live is None:
        print("\n".join(final_lines(flat, heading, available)))
    if gguf is not None:
        from tui.commands.shared.gguf_answer import ctx_words
        from tui.render.gguf_fit_table import gguf_fit_text

        print("\n".join(gguf_fit_text(gguf.rows, ctx_words(args.max_tokens), gguf.words)))
    return 0


def is_gguf_repo(listed: Any, query: Any) -> bool:
    """A repo of GGUF files: listed as the `gguf` library, or asked for as one."""
    from core.hub.listing import HubLibrary

    return bool(listed.library == HubLibrary.GGUF.value or query.library is HubLibrary.GGUF)


def read_gguf_repos(args: argparse.Namespace, question: Any, repos: list[Any], tally: Any) -> Any:
    """Each GGUF repo's quant files, a few repos at once (each read has the
    `--hub-timeout` deadline); a repo that cannot be read is one row with its reason."""
    import os

    from core.errors import VramscopeError
    from core.gguf_load.fit import GgufFitRow, rank_gguf_rows
    from core.gguf_load.hub_fit import hub_gguf_rows
    from tui.commands.shared.gguf_answer import GgufRows, gguf_ask, options_words

    ask, notes = gguf_ask(args, question)
    rows: list[GgufFitRow] = []
    _say(f"reading {len(repos)} GGUF repo{'s' if len(repos) > 1 else ''}' quant headers")

    def one(listed: Any) -> Any:
        try:
            return hub_gguf_rows(listed.repo_id, listed.commit, ask, args.hub_timeout, os.environ)
        except VramscopeError as exc:
            return clean_text(str(exc))[:300]
        except Exception as exc:  # never a traceback: the repo is one row with its reason
            return clean_text(f"{listed.repo_id}: {type(exc).__name__}: {exc}")[:300]

    # A few repos at once (each read keeps its own deadline); the answers in listed order.
    with ThreadPoolExecutor(max_workers=min(GGUF_WORKERS, len(repos))) as pool:
        results = list(pool.map(one, repos))
    for listed, got in zip(repos, results, strict=True):
        if isinstance(got, str):
            reason = got
            rows.append(GgufFitRow(listed.repo_id, listed.repo_id, "?", listed.repo_id, None,
                                   reason))  # fmt: skip
            tally.failed += 1
            tally.problems.append(reason)
            continue
        rows.extend(got.rows)
        tally.bytes_fetched += got.bytes_fetched
        if got.from_store:
            tally.from_store += 1
        else:
            tally.read += 1
    for line in notes:
        _say(line)
    return GgufRows(rank_gguf_rows(rows), frozenset(), options_words(ask.options), notes)


def final_lines(flat: list[Any], heading: list[str], available: int) -> list[str]:
    """The table with its notes, as printed at the end."""
    from tui.render.hub_fit_table import hub_table

    lines = [*heading, "", *hub_table(flat, available)]
    bound = sum(1 for r in flat if not r.exact)
    exact = [r.row for r in flat if r.exact and r.row is not None]
    lines.append("")
    lines.append(f"{sum(1 for r in exact if r.ranked_fits and not r.past_trained)} of {len(exact)} "
                 "exact rows fit (each the answer vramscope inspect REPO gives).")  # fmt: skip
    if bound:
        lines.append(
            f"≈ {bound} rows are the listing's bound only: the weights its parameter counts "
            "imply (TOTAL at least that); not read, see the warnings."
        )
    return lines


class _Live:
    """Repaints the table in place on a terminal (cursor up, clear to the end), with
    the progress line under it on stderr (the same terminal)."""

    def __init__(self) -> None:
        self.height = 0

    def paint(self, lines: list[str], status: str | None = None) -> None:
        import shutil

        width = max(20, shutil.get_terminal_size().columns - 1)
        lines = [line[:width] for line in lines]  # a wrapped line would break the count
        out = sys.stdout
        if self.height:
            out.write(f"\x1b[{self.height}F\x1b[J")
        out.write("\n".join(lines) + "\n")
        out.flush()
        self.height = len(lines)
        if status is not None:
            sys.stderr.write(clean_text(status)[:width] + "\n")
            sys.stderr.flush()
            self.height += 1
