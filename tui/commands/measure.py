"""`vramscope measure MODEL`: launch a real load, show its peak beside the estimate.

The load runs in a child process (hip_backend); this module imports neither torch
nor Textual. Exit status: 0 with a measured peak, 1 when the measurement failed
(the reason on one line), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.display_text import clean_text, json_safe
from core.errors import UsageError
from core.measurement.engine import (
    ATTENTION_CHOICES,
    DEFAULT_ENGINE,
    EMULATE_CHOICES,
    ENGINE_CHOICES,
    FUSE_BF16_CHOICES,
)
from core.measurement.protocol import MeasureEvent, MeasureNotice, MeasureProgress
from core.measurement.request import (
    DEFAULT_GEN_TOKENS,
    DEFAULT_PROMPT_TOKENS,
    DEFAULT_WARMUP_TOKENS,
    DEVICE_CHOICES,
    MAX_MEASURED_TOKENS,
    MeasureRequest,
)
from core.measurement.result import MeasuredPeak, MeasurementFailure
from core.memory_size import parse_optional_memory_size
from tui.commands._parallel import add_parallel_flags, measure_parallel, parallel_plan
from tui.commands.common import (
    MAX_DURATION_S,
    add_model_source_flags,
    duration_seconds,
    int_at_least,
)

EXIT_FAILED = 1


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by `measure` and `table`."""
    p.add_argument(
        "--gen-tokens",
        type=int_at_least("--gen-tokens", 0, MAX_MEASURED_TOKENS),
        default=DEFAULT_GEN_TOKENS,
        metavar="G",
        help=f"greedy decode tokens of the measured pass (default {DEFAULT_GEN_TOKENS})",
    )
    p.add_argument(
        "--warmup-tokens",
        type=int_at_least("--warmup-tokens", 0, MAX_MEASURED_TOKENS),
        default=DEFAULT_WARMUP_TOKENS,
        metavar="N",
        help=f"decode tokens of the warm-up pass (default {DEFAULT_WARMUP_TOKENS})",
    )
    p.add_argument(
        "--device",
        choices=DEVICE_CHOICES,
        default="auto",
        help="where to load: a ROCm or CUDA GPU, or the CPU; with --engine mlx, auto is "
        "MLX's default device (Metal on Apple silicon) (default auto)",
    )
    p.add_argument(
        "--emulate",
        choices=EMULATE_CHOICES,
        default="auto",
        help="torch engine: emulate MLX-ROCm's in-flight queue (rocm) or not (none); auto "
        "emulates it on ROCm and the CPU, not on CUDA, where MLX has none (default auto)",
    )
    p.add_argument(
        "--attention",
        choices=ATTENTION_CHOICES,
        default="auto",
        help="torch engine: MLX's unfused attention, which holds an H x L x S score matrix "
        "(mlx-fallback: what MLX runs on the CPU and ROCm) or torch's fused SDPA "
        "(torch-sdpa: like MLX's CUDA kernels); auto picks the device's (default auto)",
    )
    p.add_argument(
        "--fuse-bf16",
        choices=FUSE_BF16_CHOICES,
        default="auto",
        help="torch engine: model MLX-ROCm's fused kernel for BF16-scale quantized matmuls "
        "(no dequantized weight copy); auto: on a ROCm GPU with the queue emulated "
        "(default auto)",
    )
    p.add_argument(
        "--synthetic",
        action="store_true",
        help="use random weights of the real shapes even when weights are on disk",
    )
    p.add_argument(
        "--memory-cap",
        metavar="SIZE",
        default=None,
        help="fail as out of memory instead of growing the measuring process past SIZE "
        "(e.g. 8GB; useful for CPU runs)",
    )
    p.add_argument(
        "--timeout",
        type=duration_seconds("--timeout"),
        default=None,
        metavar="SECONDS",
        help=f"kill a run that takes longer than this (at most {MAX_DURATION_S} s, one week)",
    )
    p.add_argument(
        "--no-history",
        action="store_true",
        help="do not append results to the history file ($XDG_STATE_HOME/vramscope)",
    )
    add_model_source_flags(p)


def register(sub: Any) -> None:
    """Add the `measure` parser."""
    p = sub.add_parser(
        "measure",
        help="load a model (torch engine or real MLX) and measure its peak memory",
        description="Run mlxcel's bench workload (a warm-up pass, then P prompt tokens "
        "and G greedy decode tokens) in a child process on a ROCm or CUDA GPU or the "
        "CPU, and print the measured peak beside the estimate at context P + G. "
        "--engine mlx loads the model with mlx-lm and reports MLX's own peak "
        "(mx.get_peak_memory); the torch engine emulates MLX-ROCm's in-flight queue.",
    )
    p.add_argument(
        "model",
        metavar="MODEL",
        help="a model folder or a built-in profile name (no weights: synthetic weights)",
    )
    p.add_argument(
        "--prompt-tokens",
        type=int_at_least("--prompt-tokens", 1, MAX_MEASURED_TOKENS),
        default=DEFAULT_PROMPT_TOKENS,
        metavar="P",
        help=f"synthetic prompt tokens of the measured pass (default {DEFAULT_PROMPT_TOKENS})",
    )
    p.add_argument(
        "--inflight-mb",
        metavar="RAW",
        default=None,
        help="in-flight budget in MiB, parsed like MLX_ROCM_MAX_INFLIGHT_MB "
        "(which it overrides); 0 = bound off; default 1024",
    )
    p.add_argument(
        "--engine",
        choices=ENGINE_CHOICES,
        default=DEFAULT_ENGINE,
        help="torch: vramscope's decoder emulating MLX-ROCm (pip install 'vramscope[measure]'); "
        "mlx: real MLX through mlx-lm (pip install 'vramscope[mlx]') (default torch)",
    )
    p.add_argument(
        "--kv-cache-mode",
        choices=("fp16", "int8"),
        default="fp16",
        help="KV cache element type: int8 is mlx-lm's 8-bit quantized cache, measured by "
        "--engine mlx only (default fp16)",
    )
    add_run_flags(p)
    add_parallel_flags(p, measure=True)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def memory_cap(text: str | None) -> int | None:
    """`--memory-cap`: a size, or a usage error."""
    if text is None:
        return None
    cap = parse_optional_memory_size(text)
    if cap is None:
        raise UsageError("--memory-cap", f"'{text}' is not a size (e.g. 8GB, 512M)")
    return cap


def check_timeout(value: float | None) -> float | None:
    """`--timeout` must be a positive, finite number of seconds up to a week."""
    if value is not None and not 0 < value <= MAX_DURATION_S:
        raise UsageError(
            "--timeout", f"must be between 0 and {MAX_DURATION_S} seconds, got {value}"
        )
    return value


class ProgressLine:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    WIDTH = 24

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._shown = False

    def __call__(self, event: MeasureEvent) -> None:
        if isinstance(event, MeasureNotice):
            self.clear()
            print(f"vramscope: {clean_text(event.message)}", file=sys.stderr)
        elif isinstance(event, MeasureProgress) and self.enabled:
            filled = round(event.fraction * self.WIDTH)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            text = f"\r[{bar}] {event.phase} {event.done}/{event.total}"
            sys.stderr.write(f"{text:<72}")
            sys.stderr.flush()
            self._shown = True

    def clear(self) -> None:
        """Erase the bar before other output."""
        if self._shown:
            sys.stderr.write("\r" + " " * 72 + "\r")
            sys.stderr.flush()
            self._shown = False


def request_from_args(
    args: argparse.Namespace, model: str, prompt_tokens: int, engine: str | None = None
) -> MeasureRequest:
    """A MeasureRequest from the shared flags (`engine` overrides `--engine`: a `table`
    row, whose torch-only flags leave its mlx rows alone)."""
    table_row = engine is not None
    engine = engine or str(getattr(args, "engine", DEFAULT_ENGINE))
    kv_int8 = getattr(args, "kv_cache_mode", "fp16") == "int8"
    if kv_int8 and engine != "mlx":
        raise UsageError("--kv-cache-mode", "int8 is measured by --engine mlx only")
    torch_only = {"--attention": args.attention, "--fuse-bf16": args.fuse_bf16}
    for flag, value in torch_only.items():
        if engine == "mlx" and value != "auto" and not table_row:
            raise UsageError(flag, "chooses a torch engine kernel; --engine mlx runs MLX's own")
    mlx = engine == "mlx"
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
        emulate=str(getattr(args, "emulate", "auto")),
        attention="auto" if mlx else str(args.attention),
        fuse_bf16="auto" if mlx else str(args.fuse_bf16),
        kv_int8=kv_int8,
    )


def failure_line(failure: MeasurementFailure) -> str:
    """`vramscope: error: measurement failed (out of memory): ...`."""
    return clean_text(
        f"vramscope: error: measurement failed ({failure.kind.label}): {failure.message}"
    )


def run(args: argparse.Namespace) -> int:
    """Measure one model and print the comparison."""
    from core.measurement.report import comparison_lines
    from hip_backend.launcher import measure, prepare

    plan = parallel_plan(args)
    if plan is None and args.hostfile is not None:
        raise UsageError("--hostfile", "places the ranks of --tp N or --pp N; give one of them")
    if plan is not None:
        if args.engine != "mlx":
            raise UsageError(f"--{plan.kind.value}", "measures ranks with --engine mlx only")
        return measure_parallel(args, plan)
    request = request_from_args(args, args.model, args.prompt_tokens)
    prepared = prepare(request)  # a model that does not resolve is a usage error (exit 2)
    progress = ProgressLine(enabled=False if args.json else None)
    outcome = measure(prepared, progress, record_history=not args.no_history)
    progress.clear()
    if args.json:
        document = outcome_json(outcome, prepared.estimate.total_bytes, request.engine)
        print(json.dumps(json_safe(document), indent=2, ensure_ascii=False))
    elif isinstance(outcome, MeasuredPeak):
        print("\n".join(clean_text(line) for line in comparison_lines(outcome)))
    if isinstance(outcome, MeasurementFailure):
        print(failure_line(outcome), file=sys.stderr)
        return EXIT_FAILED
    return 0


def outcome_json(
    outcome: MeasuredPeak | MeasurementFailure, estimate_bytes: int, engine: str = DEFAULT_ENGINE
) -> dict[str, Any]:
    """The `--json` document: the engine and what its peak counts, the estimate it is
    held against (the run's backend formula for mlx, ROCm's for torch), the margin."""
    if isinstance(outcome, MeasurementFailure):
        return {"engine": engine, "estimate_bytes": estimate_bytes, "error": outcome.to_dict()}
    m = outcome.margin
    return {
        "engine": outcome.engine,
        "counted": outcome.counted,
        "estimate_bytes": outcome.estimate_bytes
        if outcome.estimate_bytes is not None
        else estimate_bytes,
        "estimate_backend": outcome.estimate_backend.value,
        "measured": outcome.to_dict(),
        "margin": None
        if m is None
        else {"bytes": m.bytes, "percent": round(m.percent, 3), "covered": m.covered},
    }
