"""`vramscope fit`: every catalog model, as stored and as mlx-lm would quantize it, ranked."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core import __version__
from core.answer.fit import QUANTIZATION_CHOICES, STORED
from core.backend import BACKEND_CHOICES, Backend
from core.device.memory import MEMORY_CHOICES, DeviceMemory, device_available
from core.display_text import json_safe
from core.environment import read_env, resolve_settings
from core.errors import UsageError
from core.estimate.available import AvailableMemory
from core.estimate.estimate import Workload
from core.units import format_bytes_short
from tui.commands._calibrated import add_calibration_flags, chosen_calibration, wanted
from tui.commands.shared.estimate_args import backend_choice, parse_memory_limit_flag
from tui.commands.shared.flags import add_model_source_flags, add_workload_flags
from tui.commands.shared.output import warn
from tui.model.presets import PRESETS_BY_KEY, preset_keys

DEFAULT_QUANTIZATIONS = ",".join(QUANTIZATION_CHOICES)


def register(sub: Any) -> None:
    """Add the `fit` parser."""
    p = sub.add_parser(
        "fit",
        help="rank every model by what fits, as stored and as mlx-lm would quantize it",
        description="One row per (model, quantization) over every model vramscope can see "
        "(built-in profiles, the HF cache, --models-dir folders): the total at --max-tokens, "
        "the verdict, the slack and the largest context that fits. Fitting rows first, "
        "then bigger models (docs/fit.md). Reads nothing from the network.",
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
        help=f"comma-separated, from {', '.join(QUANTIZATION_CHOICES)} "
        f"(default {DEFAULT_QUANTIZATIONS})",
    )
    p.add_argument("--json", action="store_true", help='print {"rows": [...], "inputs": {...}}')
    add_calibration_flags(p)
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="read every folder afresh, without the catalog cache",
    )
    p.set_defaults(func=run)


def parse_quantizations(text: str) -> tuple[str, ...]:
    """`--quantizations`: known words, each once, in the order given."""
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    unknown = [w for w in words if w not in QUANTIZATION_CHOICES]
    if unknown or not words:
        shown = unknown[0] if unknown else text
        raise UsageError(
            "--quantizations",
            f"'{shown}' is not one of {', '.join(QUANTIZATION_CHOICES)} (comma-separated)",
        )
    return tuple(dict.fromkeys(words))


def _available(
    args: argparse.Namespace, backend: Backend
) -> tuple[int | None, AvailableMemory | None, DeviceMemory | None]:
    """(the --memory-limit size, or the available memory already decided, and the device
    read for free/total), from the flags."""
    if args.preset is not None:
        return None, PRESETS_BY_KEY[args.preset].available(), None
    text = (args.memory_limit or "").strip().lower()
    if text in MEMORY_CHOICES:
        available, device = device_available(text, backend)
        return None, available, device
    return parse_memory_limit_flag(args.memory_limit), None, None


def run(args: argparse.Namespace) -> int:
    """`vramscope fit`: the ranked table (or JSON)."""
    from core.answer.fit import model_rows, rank_rows
    from core.calibration.report import calibration_json
    from core.catalog.fit_models import fit_reader
    from core.catalog.resolve import build_catalog
    from core.errors import VramscopeError
    from tui.render.fit_table import CalibratedColumn, fit_text

    quantizations = parse_quantizations(args.quantizations)
    choice = backend_choice(args)  # a preset's device's backend unless --backend is given
    memory_limit, available, device = _available(args, choice.backend)
    if device is not None:
        warn(device.notes)
    resolved = resolve_settings(
        choice.backend,
        read_env(),
        inflight_flag=args.inflight_mb,
        memory_limit=memory_limit,
        available=available,
    )
    warn(resolved.warnings)
    settings = resolved.settings
    workload = Workload(
        max_tokens=args.max_tokens, batch=args.batch, kv_int8=args.kv_cache_mode == "int8"
    )
    catalog = build_catalog(args.models_dir, use_cache=not args.no_cache)
    rows = []
    with fit_reader(use_cache=not args.no_cache) as reader:
        for entry in catalog.entries:
            try:
                model = reader.read(entry, what_ifs_too=quantizations != (STORED,))
            except VramscopeError as exc:
                warn([f"{entry.name}: skipped: {exc}"])
                continue
            rows.extend(model_rows(model, quantizations, workload, settings))
    ranked = rank_rows(rows)
    column = None
    if wanted(args):
        backend = settings.backend.value
        column = CalibratedColumn(
            chosen_calibration(args, backend), settings.available.bytes, backend
        )
    inputs = {
        "memory_limit": args.memory_limit,
        "preset": args.preset,
        "available_bytes": settings.available.bytes,
        "available_source": settings.available.source,
        "backend": settings.backend.value,
        "inflight_bytes": settings.backend_inflight_bytes,
        "max_tokens": args.max_tokens,
        "batch": args.batch,
        "kv_cache_mode": workload.kv_cache_mode,
        "quantizations": list(quantizations),
        "models_dirs": [str(d) for d in catalog.models_dirs],
        "hf_cache_dir": str(catalog.hf_cache_dir) if catalog.hf_cache_dir else None,
        "device": device.json() if device is not None else None,
    }
    if column is not None:  # vramscope's own, after every key fit always wrote
        cal = column.calibration
        inputs["calibration"] = calibration_json(cal) if cal is not None else None
    if args.json:
        document = {
            "vramscope_version": __version__,
            "inputs": inputs,
            "rows": [_row_json(row, column) for row in ranked],
        }
        print(json.dumps(json_safe(document), indent=2, ensure_ascii=False))
        return 0
    heading = [
        f"Available: {format_bytes_short(settings.available.bytes)} "
        f"({settings.available.bytes} bytes; {settings.available.source})",
        f"Backend: {settings.backend.value}; context {args.max_tokens:,} tokens, "
        f"batch {args.batch}, KV {workload.kv_cache_mode}",
    ]
    if device is not None:
        heading.insert(0, device.line)
    print("\n".join(fit_text(ranked, heading, column)))
    return 0


def _row_json(row: Any, column: Any) -> dict[str, Any]:
    """A row of `fit --json`; with `--calibrated`, vramscope's total and verdict after
    every key of the row (null where no calibration applies)."""
    from core.calibration.report import row_calibrated_total

    out: dict[str, Any] = row.json()
    if column is None:
        return out
    cal = column.calibration
    total = row_calibrated_total(cal, row) if cal is not None else None
    out["calibrated_total_bytes"] = total
    out["calibrated_fits"] = total <= column.available_bytes if total is not None else None
    return out
