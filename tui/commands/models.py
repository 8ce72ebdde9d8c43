"""`vramscope models`: every model vramscope can name, and where it was found."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from core.catalog.entry import (
    ORIGIN_BUILTIN,
    ORIGIN_FOLDER,
    ORIGIN_HF_CACHE,
    ORIGIN_HUB,
    Catalog,
    CatalogEntry,
)
from core.display_text import clean_text, json_safe
from core.estimate.weights import WeightsSource
from core.units import format_bytes_short
from tui.commands.registry import help_line
from tui.commands.shared.flags import add_hub_timeout_flag, add_model_source_flags, int_at_least
from tui.commands.shared.output import warn

_SOURCE_WORDS = {
    WeightsSource.SAFETENSORS_HEADER: "header",
    WeightsSource.ANALYTICAL_CONFIG: "config",
    WeightsSource.FALLBACK: "fallback",
}
_COLUMNS = ("NAME", "FORMAT", "WEIGHTS", "SIZE FROM", "KV", "CONTEXT", "ON DISK", "WHERE")


def register(sub: Any) -> None:
    """Add the `models` parser."""
    p = sub.add_parser(
        "models",
        help=help_line("models"),
        description="List built-in profiles, models in the Hugging Face cache and model "
        "folders (--models-dir, VRAMSCOPE_MODELS_DIR), and repos read from the Hub before. "
        "Reads nothing from the network, except --hub QUERY.",
    )
    add_model_source_flags(p)
    p.add_argument("--json", action="store_true", help="print the catalog as JSON")
    p.add_argument(
        "--verbose", "-v", action="store_true", help="also list what was skipped, and why"
    )
    p.add_argument(
        "--hub",
        metavar="QUERY",
        default=None,
        help="search the Hugging Face Hub instead (HfApi.list_models); `inspect` reads any result",
    )
    p.add_argument(
        "--limit",
        type=int_at_least("--limit", 1, 100),
        default=20,
        metavar="N",
        help="at most N Hub results (default 20, at most 100)",
    )
    add_hub_timeout_flag(p)
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="read every folder afresh, without the catalog cache in $XDG_CACHE_HOME/vramscope",
    )
    p.set_defaults(func=run)


def entry_row(entry: CatalogEntry) -> tuple[str, ...]:
    """One table row: the columns of `_COLUMNS`."""
    if entry.origin == ORIGIN_BUILTIN:
        where = "built-in profile"
    else:
        where = f"{entry.origin_label}: {entry.path}"
    row = (
        entry.name + (" (!)" if entry.warnings else ""),
        entry.format_label,
        format_bytes_short(entry.weight_bytes),
        _SOURCE_WORDS.get(entry.weights_source, entry.weights_source.json_label),
        entry.kv_kind.value if entry.kv_kind else "unavailable",
        str(entry.max_position_embeddings or "-"),
        "yes" if entry.weights_on_disk else "no",
        where,
    )
    return tuple(clean_text(cell) for cell in row)


def format_table(rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart; the last column is not padded."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=False)) + "  " + row[-1]
        for row in rows
    ]


def summary(catalog: Catalog) -> str:
    """`18 models: 14 built-in, 0 in the HF cache (...), 0 in folders, 4 read from the Hub;
    2 skipped`: every origin listed is counted."""
    count = {o: sum(e.origin == o for e in catalog.entries) for o in _ORIGINS}
    cache = catalog.hf_cache_dir
    cache_note = ""
    if cache is not None:
        cache_note = f" ({cache}{'' if cache.is_dir() else ': not found'})"
    line = (
        f"{len(catalog.entries)} models: {count[ORIGIN_BUILTIN]} built-in, "
        f"{count[ORIGIN_HF_CACHE]} in the HF cache{cache_note}, "
        f"{count[ORIGIN_FOLDER]} in folders"
    )
    if count[ORIGIN_HUB]:
        line += f", {count[ORIGIN_HUB]} read from the Hub"
    if catalog.skipped:
        line += f"; {len(catalog.skipped)} skipped"
    flagged = sum(1 for e in catalog.entries if e.warnings)
    if flagged:
        line += f"; {flagged} with file faults (!)"
    return line


_ORIGINS = (ORIGIN_BUILTIN, ORIGIN_HF_CACHE, ORIGIN_FOLDER, ORIGIN_HUB)


def catalog_json(catalog: Catalog) -> dict[str, Any]:
    """The JSON document of `models --json`."""
    return {
        "hf_cache_dir": str(catalog.hf_cache_dir) if catalog.hf_cache_dir else None,
        "models_dirs": [str(d) for d in catalog.models_dirs],
        "models": [
            {
                "name": e.name,
                "origin": e.origin.value,
                "origin_label": e.origin_label,
                "format": e.format_label,
                "weight_bytes": e.weight_bytes,
                "weights_source": e.weights_source.json_label,
                "kv_kind": e.kv_kind.value if e.kv_kind else None,
                "max_position_embeddings": e.max_position_embeddings,
                "weights_on_disk": e.weights_on_disk,
                "path": str(e.path) if e.path else None,
                "revision": e.revision,
                "refs": list(e.refs),
                "profile_id": e.profile_id,
                "warnings": list(e.warnings),
            }
            for e in catalog.entries
        ],
        "skipped": [
            {"location": s.location, "name": s.name, "reason": s.reason} for s in catalog.skipped
        ],
    }


def run(args: argparse.Namespace) -> int:
    """`vramscope models`: the catalog as a table (or JSON)."""
    # Imported here, not with the parser: the explorer's start-up never needs it.
    from core.catalog.resolve import build_catalog

    if args.hub is not None:
        return run_hub_search(args)
    catalog = build_catalog(args.models_dir, use_cache=not args.no_cache)
    warn(catalog.notices)
    if args.json:
        print(json.dumps(json_safe(catalog_json(catalog)), indent=2, ensure_ascii=False))
        return 0
    if catalog.entries:
        for line in format_table([_COLUMNS, *(entry_row(e) for e in catalog.entries)]):
            print(line.rstrip())
    print()
    flagged = [e for e in catalog.entries if e.warnings]
    more = catalog.skipped or flagged
    print(clean_text(summary(catalog)) + ("" if args.verbose or not more else " (--verbose: why)"))
    if args.verbose and flagged:
        print()
        print("File faults (the estimate fell back past them):")
        for entry in flagged:
            for warning in entry.warnings:
                print(clean_text(f"  {entry.name}: {warning}"))
    if args.verbose and catalog.skipped:
        print()
        print("Skipped:")
        for item in catalog.skipped:
            print(clean_text(f"  {item.location}: {item.reason}"))
    return 0


def run_hub_search(args: argparse.Namespace) -> int:
    """`vramscope models --hub QUERY`: the Hub's search results as a table (or JSON)."""
    from core.hub.search import search_hub

    def warn(line: str) -> None:
        print(f"vramscope: warning: {clean_text(line)}", file=sys.stderr)

    rows = search_hub(args.hub, args.limit, args.hub_timeout, warn=warn)
    if args.json:
        print(json.dumps([vars(r) for r in rows], indent=2, ensure_ascii=False))
        return 0
    header = ("NAME", "DOWNLOADS", "LIBRARY", "SAFETENSORS", "GATED")
    table = [
        (
            r.repo_id,
            "" if r.downloads is None else f"{r.downloads:,}",
            r.library or "",
            "?" if r.safetensors is None else "yes" if r.safetensors else "no",
            "yes" if r.gated else "",
        )
        for r in rows
    ]
    if table:
        for line in format_table([header, *table]):
            print(line.rstrip())
        print()
    print(
        clean_text(f"{len(rows)} Hub results for {args.hub!r}")
        + ("; `vramscope inspect NAME` reads one (config and headers only)" if rows else "")
    )
    return 0
