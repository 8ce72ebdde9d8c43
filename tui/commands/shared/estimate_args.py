"""What the estimate commands build from their parsed flags: one builder each for the
estimate's inputs (`inspect`, `inspect --tp/--pp`) and the explorer's launch options
(`explore`, `screenshot`), and the flags' usage errors argparse cannot check."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from core.backend import BackendChoice, resolve_backend
from core.environment import ResolvedSettings, read_env, resolve_settings
from core.errors import UsageError
from core.estimate.available import AvailableMemory
from core.estimate.estimate import QuantHint, Workload, parse_quant_hint
from core.numbers import rust_trim
from core.value_grammar import Refused, read_byte_size
from tui.commands.shared.output import warn
from tui.model.presets import PRESETS_BY_KEY, preset_backend
from tui.model.state import LaunchOptions


def parse_quant_flag(text: str) -> QuantHint:
    """`--quant`: mlxcel's aliases, or a one-line usage error (an empty value too: it
    is not the default, which is the flag left out)."""
    if not text.strip():
        raise UsageError("--quant", "is empty; expected one of default, fp16, int8, int4")
    try:
        return parse_quant_hint(text)
    except ValueError as exc:
        raise UsageError("--quant", str(exc).removeprefix("--quant: ")) from None


def parse_memory_limit_flag(text: str | None) -> int | None:
    """`--memory-limit`: a size in `core.value_grammar`'s forms, or "not set" (None).

    `none`, and a size of 0 as mlxcel's preflight reads `MLXCEL_MEMORY_LIMIT=0`, mean
    "not set": the variable or this machine decides; a 0 says so in one warning line
    (it is never a limit of 0 bytes). Anything else is a one-line usage error."""
    if text is None or rust_trim(text).lower() == "none":
        return None
    limit = read_byte_size(text)
    if isinstance(limit, Refused):
        raise UsageError("--memory-limit", limit.reason)
    if limit == 0:
        warn(
            [
                f"--memory-limit {rust_trim(text)} means not set (as MLXCEL_MEMORY_LIMIT=0 "
                "does): available memory comes from MLXCEL_MEMORY_LIMIT or this machine"
            ]
        )
        return None
    return limit


@dataclass(frozen=True)
class EstimateInputs:
    """The estimate's settings (with the warnings about them) and its workload."""

    resolved: ResolvedSettings
    workload: Workload


def check_preset(args: argparse.Namespace) -> str | None:
    """`--preset`, refused beside `--memory-limit` (both say how much is available)."""
    preset: str | None = getattr(args, "preset", None)
    if preset is not None and args.memory_limit is not None:
        raise UsageError("--preset", "sets the available memory; give it or --memory-limit")
    return preset


def backend_choice(args: argparse.Namespace) -> BackendChoice:
    """`--backend`; with `auto`, the `--preset` device's backend, else this machine's."""
    by_preset = preset_backend(args.backend, getattr(args, "preset", None))
    return by_preset if by_preset is not None else resolve_backend(args.backend)


def estimate_inputs(
    args: argparse.Namespace,
    quant: QuantHint,
    memory_limit: int | None = None,
    available: AvailableMemory | None = None,
) -> EstimateInputs:
    """The backend, environment and `--inflight-mb` settings and the workload the flags
    ask for (`memory_limit`: the parsed `--memory-limit`; None for per-rank limits; a
    `--preset` gives its own available memory; `available`: a device's free or total
    memory already read)."""
    choice = backend_choice(args)
    preset = check_preset(args)
    resolved = resolve_settings(
        choice.backend,
        read_env(),
        inflight_flag=args.inflight_mb,
        memory_limit=memory_limit,
        available=(PRESETS_BY_KEY[preset].available() if preset is not None else available),
    )
    workload = Workload(
        max_tokens=args.max_tokens,
        batch=args.batch,
        kv_int8=args.kv_cache_mode == "int8",
        quant=quant,
    )
    return EstimateInputs(resolved, workload)


def launch_options(args: argparse.Namespace) -> LaunchOptions:
    """Validate the flags (one-line usage errors) and build the app's starting options."""
    quant = parse_quant_flag(args.quant)
    check_preset(args)
    device = (args.memory_limit or "").strip().lower()
    device_choice = device if device in ("free", "total") else None
    limit = None if device_choice else parse_memory_limit_flag(args.memory_limit)
    return LaunchOptions(
        model=args.model,
        max_tokens=args.max_tokens,
        batch=args.batch,
        kv_int8=args.kv_cache_mode == "int8",
        quant=quant,
        backend=args.backend,
        inflight_raw=args.inflight_mb,
        memory_limit=limit,
        memory_device=device_choice,
        preset=args.preset,
        models_dirs=tuple(args.models_dir),
    )
