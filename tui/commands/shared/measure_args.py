"""The measurement request `measure` and `table` build from their parsed flags."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from core.errors import UsageError
from core.estimate.estimate import KvCacheMode
from core.measurement.engine import DEFAULT_ENGINE, Engine
from core.measurement.request import MeasureRequest
from core.value_grammar import Refused, read_byte_size
from tui.commands.shared.flags import MAX_DURATION_S, engine_option_flag


def memory_cap(text: str | None) -> int | None:
    """`--memory-cap`: a size above 0 in `core.value_grammar`'s forms, or a usage error."""
    if text is None:
        return None
    cap = read_byte_size(text, minimum=1)
    if isinstance(cap, Refused):
        raise UsageError("--memory-cap", cap.reason)
    return cap


def check_timeout(value: float | None) -> float | None:
    """`--timeout` must be a positive, finite number of seconds up to a week."""
    if value is not None and not 0 < value <= MAX_DURATION_S:
        raise UsageError(
            "--timeout", f"must be between 0 and {MAX_DURATION_S} seconds, got {value}"
        )
    return value


def request_from_args(
    args: argparse.Namespace, model: str, prompt_tokens: int, engine: Engine | None = None
) -> MeasureRequest:
    """A MeasureRequest from the shared flags (`engine` overrides `--engine`: a `table`
    row, whose torch-only flags leave its mlx rows alone)."""
    table_row = engine is not None
    engine = engine or Engine.named(getattr(args, "engine", DEFAULT_ENGINE))
    kv_int8 = KvCacheMode.named(
        getattr(args, "kv_cache_mode", KvCacheMode.FP16), "--kv-cache-mode"
    ).int8
    if kv_int8 and not engine.spec.int8_kv:
        raise UsageError("--kv-cache-mode", "int8 is measured by --engine mlx only")
    return MeasureRequest(
        model=model,
        prompt_tokens=prompt_tokens,
        gen_tokens=args.gen_tokens,
        warmup_tokens=args.warmup_tokens,
        inflight=getattr(args, "inflight_mb", None),
        device=args.device,
        models_dirs=tuple(str(Path(d)) for d in args.models_dir),
        synthetic=args.synthetic,
        host_memory_cap_bytes=memory_cap(args.memory_cap),
        timeout_s=check_timeout(args.timeout),
        engine=engine,
        kv_int8=kv_int8,
        **engine_option_values(args, engine, refuse_others=not table_row),
    )


def engine_option_values(
    args: argparse.Namespace, engine: Engine, refuse_others: bool = True
) -> dict[str, Any]:
    """The request fields of every engine's options (`add_engine_option_flags`' flags):
    `engine`'s as given, any other engine's at its default. Another engine's option
    given is a usage error (`refuse_others`; a `table` row of that other engine takes
    it instead)."""
    values: dict[str, Any] = {}
    for owner in Engine:
        for option in owner.spec.options:
            given = getattr(args, option.name, option.default)
            if owner is not engine and given != option.default and refuse_others:
                raise UsageError(
                    engine_option_flag(option),
                    f"chooses a {owner.label} option; --engine {engine.value} does not take it",
                )
            values[option.name] = given if owner is engine else option.default
    return values
