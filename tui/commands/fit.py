"""`vramscope fit`: every catalog model, as stored and as mlx-lm would quantize it, ranked."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from core import __version__
from core.answer.quantization import Quantization
from core.backend import BACKEND_CHOICES
from core.display_text import clean_text, json_safe
from core.errors import UsageError
from core.estimate.estimate import QuantHint
from tui.commands._calibrated import add_calibration_flags, candidates, wanted
from tui.commands.fit_hub import add_hub_fit_flags, run_hub
from tui.commands.registry import help_line
from tui.commands.shared.estimate_args import question_from_args
from tui.commands.shared.flags import (
    add_hub_timeout_flag,
    add_model_source_flags,
    add_workload_flags,
)
from tui.commands.shared.gguf_answer import GgufRows, ctx_words, gguf_ask, options_words
from tui.commands.shared.gguf_args import add_llama_cpp_flags
from tui.commands.shared.output import note, warn
from tui.model.presets import preset_keys

if TYPE_CHECKING:
    from core.answer.fit import FitRow
    from core.answer.question import Question
    from core.catalog.entry import Catalog

QUANTIZATION_CHOICES: tuple[Quantization, ...] = tuple(Quantization)
DEFAULT_QUANTIZATIONS = ",".join(q.word for q in QUANTIZATION_CHOICES)


def register(sub: Any) -> None:
    """Add the `fit` parser."""
    p = sub.add_parser(
        "fit",
        help=help_line("fit"),
        description="One row per (model, quantization) over every model vramscope can see "
        "(built-in profiles, the HF cache, --models-dir folders): the total at --max-tokens, "
        "the verdict, the slack and the largest context that fits. Fitting rows first, "
        "then bigger models (docs/fit.md). Reads nothing from the network, except --hub: "
        "one listing of the Hub's models, then each listed repo's config and headers.",
    )
    add_model_source_flags(p)
    limit = p.add_mutually_exclusive_group()
    limit.add_argument(
        "--memory-limit",
        metavar="SIZE|free|total",
        default=None,
        help="available memory: a size (64GB, 512M, bytes), or this device's free or total "
        "memory read from sysfs or /proc/meminfo; beats MLXCEL_MEMORY_LIMIT",
    )
    limit.add_argument(
        "--preset",
        choices=preset_keys(),
        default=None,
        help="available memory of a device preset (MLX's limit on that device)",
    )
    p.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default="auto",
        help="backend to estimate for; only rocm adds the in-flight reserve",
    )
    p.add_argument(
        "--inflight-mb",
        metavar="RAW",
        default=None,
        help="ROCm in-flight budget in MiB (overrides MLX_ROCM_MAX_INFLIGHT_MB)",
    )
    add_workload_flags(p)
    p.add_argument(
        "--quantizations",
        default=DEFAULT_QUANTIZATIONS,
        metavar="LIST",
        help=f"comma-separated, from {', '.join(q.word for q in QUANTIZATION_CHOICES)} "
        f"(default {DEFAULT_QUANTIZATIONS})",
    )
    p.add_argument("--json", action="store_true", help='print {"rows": [...], "inputs": {...}}')
    add_calibration_flags(p)
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="read every folder afresh, without the catalog cache",
    )
    add_hub_fit_flags(p)
    add_hub_timeout_flag(p)
    add_llama_cpp_flags(p)
    p.set_defaults(func=run)


def parse_quantizations(text: str) -> tuple[Quantization, ...]:
    """`--quantizations`: known words, each once, in the order given."""
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    choices = ", ".join(q.word for q in QUANTIZATION_CHOICES)
    found: list[Quantization] = []
    for word in words:
        try:
            found.append(Quantization.named(word))
        except ValueError:
            raise UsageError(
                "--quantizations", f"'{word}' is not one of {choices} (comma-separated)"
            ) from None
    if not found:
        raise UsageError("--quantizations", f"'{text}' is not one of {choices} (comma-separated)")
    return tuple(dict.fromkeys(found))


def run(args: argparse.Namespace) -> int:
    """`vramscope fit`: the ranked table (or JSON), every row an answer to inspect's
    question about that model (the same device, through the same resolution)."""
    from core.answer.calibrated import choose_for_device
    from core.answer.fit import model_rows, rank_rows
    from core.calibration.report import calibration_json
    from core.catalog.resolve import build_catalog
    from core.errors import VramscopeError
    from core.fit.models import fit_entries, fit_reader, skipped_lines
    from tui.render.fit_table import CalibratedColumn, fit_heading, fit_text
    from tui.render.gguf_fit_table import gguf_fit_text

    quantizations = parse_quantizations(args.quantizations)
    if args.hub is None:
        for flag, value in (("--author", args.author), ("--library", args.library),
                            ("--sort", args.sort), ("--refresh", args.refresh)):  # fmt: skip
            if value:
                raise UsageError(flag, "only with --hub [QUERY]")
    inputs = question_from_args(args, QuantHint.DEFAULT, identify=wanted(args))
    warn(inputs.notes)
    warn(inputs.warnings)
    question = inputs.question
    if args.hub is not None:
        if wanted(args) or args.no_cache or args.models_dir:
            warn(["--hub ranks the Hub's models, mlxcel's estimate only: --calibrated, "
                  "--models-dir and --no-cache are not applied"])  # fmt: skip
        return run_hub(args, question, quantizations)
    device = question.device
    calibrations = candidates(args)
    catalog = build_catalog(args.models_dir, use_cache=not args.no_cache)
    rows = []
    skipped = skipped_lines(catalog)
    notices = list(catalog.notices)
    with fit_reader(use_cache=not args.no_cache, notices=notices) as reader:
        for entry in fit_entries(catalog):  # a profile and its Hub-store copy: one model
            try:
                model = reader.read(entry, what_ifs_too=quantizations != (Quantization.STORED,))
            except VramscopeError as exc:
                skipped.append(clean_text(f"{entry.name}: {exc}"))
                continue
            rows.extend(
                model_rows(model, quantizations, question, calibrations, args.calibration_engine)
            )
    warn(notices)
    ranked = rank_rows(rows)
    gguf = _gguf_rows(args, question, catalog)
    note(gguf.notes)
    # A folder of GGUF files the catalog skipped (safetensors only) has its rows here.
    skipped = [
        line
        for s, line in zip(catalog.skipped, skipped_lines(catalog), strict=True)
        if s.location not in gguf.folders
    ] + skipped[len(catalog.skipped) :]
    column = None
    if calibrations is not None:
        cal, reason = choose_for_device(device, calibrations, args.calibration_engine)
        column = CalibratedColumn(cal, device.available.bytes, device.backend.value, reason)
    settings = question.settings
    inputs_json = {
        "memory_limit": args.memory_limit,
        "preset": args.preset,
        "available_bytes": device.available.bytes,
        "available_source": device.available.source,
        "backend": device.backend.value,
        "inflight_bytes": settings.backend_inflight_bytes,
        "max_tokens": args.max_tokens,
        "batch": args.batch,
        "kv_cache_mode": question.workload.kv_cache_mode.value,
        "quantizations": [q.word for q in quantizations],
        "models_dirs": [str(d) for d in catalog.models_dirs],
        "hf_cache_dir": str(catalog.hf_cache_dir) if catalog.hf_cache_dir else None,
        "device": device.reading.json() if device.reading is not None else None,
        # vramscope's, after every key fit always wrote: the one device resolution's.
        "answered_for": device.json(),
    }
    if column is not None:
        cal = column.calibration
        inputs_json["calibration"] = calibration_json(cal) if cal is not None else None
    if args.json:
        document = {
            "vramscope_version": __version__,
            "inputs": inputs_json,
            "rows": [_row_json(row, column) for row in ranked],
            # vramscope's, after every key fit always wrote: as `models --json` says them.
            "skipped": skipped,
            # vramscope's, after them: one row per GGUF quant file (llama.cpp's load).
            "gguf_rows": [row.json() for row in gguf.rows],
        }
        print(json.dumps(json_safe(document), indent=2, ensure_ascii=False))
        return 0
    print("\n".join(fit_text(ranked, fit_heading(question), column, skipped)))
    if gguf.rows:
        print("\n".join(gguf_fit_text(gguf.rows, ctx_words(args.max_tokens), gguf.words)))
    return 0


def _gguf_rows(args: argparse.Namespace, question: Question, catalog: Catalog) -> GgufRows:
    from core.gguf_load.fit import local_gguf_files, local_rows, rank_gguf_rows

    ask, notes = gguf_ask(args, question)
    files = local_gguf_files(list(catalog.models_dirs), catalog.hf_cache_dir)
    rows = rank_gguf_rows(local_rows(files, ask))
    folders = frozenset(str(f.path.parent) for f in files)
    return GgufRows(rows, folders, options_words(ask.options), notes)


def _row_json(row: FitRow, column: Any) -> dict[str, Any]:
    """A row of `fit --json`; with `--calibrated`, vramscope's total and verdict after
    every key of the row (null where no calibration applies)."""
    out: dict[str, Any] = row.json()
    if column is None:
        return out
    cal = row.found.calibrated if row.found is not None else None
    out["calibrated_total_bytes"] = cal.total_bytes if cal is not None else None
    out["calibrated_fits"] = cal.fits if cal is not None else None
    # The mlx-lm load calibrated (the calibration's load fit), as `inspect --json
    # --calibrated` gives it under `calibrated.load`; null where there is none.
    out["calibrated_load_total_bytes"] = cal.load_total_bytes if cal is not None else None
    out["calibrated_load_fits"] = cal.load_verdict.fits if cal is not None else None
    return out
