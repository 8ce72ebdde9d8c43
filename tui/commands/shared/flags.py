"""Every flag more than one subcommand takes, defined once, and the argparse types they use.

Cheap to import: the parser of every subcommand is built at each start.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from core.backend import BACKEND_CHOICES
from core.display_text import clean_text
from core.errors import UsageError
from core.estimate.estimate import DEFAULT_CTX_LEN
from core.hub import DEFAULT_TIMEOUT_S
from core.measurement.engine import Engine, EngineOption
from core.measurement.request import (
    DEFAULT_GEN_TOKENS,
    DEFAULT_WARMUP_TOKENS,
    DEVICE_CHOICES,
    MAX_MEASURED_TOKENS,
)
from core.numbers import decimal_to_int
from core.parallel.plan import MAX_RANKS
from core.units import U64_MAX
from core.value_grammar import Refused, read_token_count
from tui.model.presets import preset_keys
from tui.model.state import DEFAULT_MODEL

if TYPE_CHECKING:
    from core.hub.options import HubOptions

# Durations above a week are refused: timers cannot take inf, nan or 1e308 seconds.
MAX_DURATION_S = 7 * 24 * 3600


def _shown(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def int_at_least(flag: str, minimum: int, maximum: int = U64_MAX) -> Callable[[str], int]:
    """An argparse type: a decimal integer in [`minimum`, `maximum`] (u64 by default,
    as mlxcel's flags are), never a traceback on a 5000-digit value."""

    def convert(text: str) -> int:
        digits = text.strip()
        negative = digits.startswith("-")
        digits = digits[1:] if digits[:1] in "+-" else digits
        value = decimal_to_int(digits) if digits.isascii() and digits.isdigit() else None
        if value is None and digits.isascii() and digits.isdigit():
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got '{_shown(text)}'")
        if value is None:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{_shown(text)}'")
        value = -value if negative else value
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {value}")
        return value

    convert.__name__ = flag
    return convert


def token_count(flag: str, minimum: int, maximum: int = U64_MAX) -> Callable[[str], int]:
    """An argparse type: a token count in `core.value_grammar`'s forms (`8192`, `32k`,
    `1.5k`, `128K`; k = 1024, as the explorer's boxes read it) in [`minimum`, `maximum`]."""

    def convert(text: str) -> int:
        value = read_token_count(text, minimum, maximum)
        if isinstance(value, Refused):
            raise argparse.ArgumentTypeError(value.reason)
        return value

    convert.__name__ = flag
    return convert


def duration_seconds(flag: str) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds in (0, MAX_DURATION_S]."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number of seconds, got '{_shown(text)}'"
            ) from None
        if not 0 < value <= MAX_DURATION_S:  # also refuses nan and inf
            raise argparse.ArgumentTypeError(
                f"must be more than 0 and at most {MAX_DURATION_S} seconds (a week), "
                f"got '{_shown(text)}'"
            )
        return value

    convert.__name__ = flag
    return convert


def add_workload_flags(p: argparse.ArgumentParser) -> None:
    """`--max-tokens`, `--batch`, `--kv-cache-mode`: what the model is asked to hold."""
    p.add_argument(
        "--max-tokens",
        "-n",
        type=token_count("--max-tokens", 0),
        default=DEFAULT_CTX_LEN,
        metavar="N",
        help=f"context length in tokens: 8192, 32k, 1.5k (k = 1024) (default {DEFAULT_CTX_LEN})",
    )
    p.add_argument(
        "--batch",
        type=int_at_least("--batch", 1),
        default=1,
        metavar="N",
        help="concurrent sequences (default 1)",
    )
    p.add_argument(
        "--kv-cache-mode",
        choices=("fp16", "int8"),
        default="fp16",
        help="KV cache element type (default fp16)",
    )


def add_estimate_flags(p: argparse.ArgumentParser) -> None:
    """The flags that shape an estimate, shared by inspect, measure and screenshot."""
    add_model_source_flags(p)
    add_workload_flags(p)
    p.add_argument(
        "--quant",
        default="default",
        metavar="{default,fp16,int8,int4}",
        help="quantization label (never changes the bytes)",
    )
    p.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default="auto",
        help="backend to estimate for; only rocm adds the in-flight reserve "
        "(default: this machine's, detected without starting a GPU runtime)",
    )
    p.add_argument(
        "--inflight-mb",
        metavar="RAW",
        default=None,
        help="ROCm in-flight budget in MiB; overrides MLX_ROCM_MAX_INFLIGHT_MB and "
        "goes through the same parser (0 = bound off)",
    )
    p.add_argument(
        "--memory-limit",
        metavar="SIZE|free|total",
        default=None,
        help="available memory: 24GB, 24GiB, 512M or bytes (binary units: G = GB = GiB = "
        "2^30, as MLXCEL_MEMORY_LIMIT reads them), or this device's free or total memory "
        "(sysfs, NVML/nvidia-smi, MLX, /proc/meminfo); 0 or none = not set; beats "
        "MLXCEL_MEMORY_LIMIT",
    )


def models_dir(text: str) -> Path:
    """`--models-dir`: a folder that is there (every command refuses one that is not,
    before any work; VRAMSCOPE_MODELS_DIR, set once for every run, is skipped instead)."""
    path = Path(text)
    if not path.is_dir():
        why = "not a folder" if path.exists() else "no such folder"
        raise argparse.ArgumentTypeError(f"'{text}': {why}")
    return path


def add_model_source_flags(p: argparse.ArgumentParser) -> None:
    """`--models-dir DIR`, repeatable: extra folders to look for models in."""
    p.add_argument(
        "--models-dir",
        action="append",
        type=models_dir,
        default=[],
        metavar="DIR",
        help="a folder of model folders to search (repeatable; also VRAMSCOPE_MODELS_DIR)",
    )


def add_launch_flags(p: argparse.ArgumentParser) -> None:
    """`--model`, `--preset` and every estimate flag of `inspect`."""
    p.add_argument(
        "--model",
        "-m",
        default=DEFAULT_MODEL,
        metavar="MODEL",
        help="model to open: a folder, a profile name or a cached repo id; a GGUF (a .gguf "
        f"file, a folder of them, REPO:QUANT) opens with llama.cpp's controls (default "
        f"{DEFAULT_MODEL})",
    )
    add_estimate_flags(p)
    add_preset_flag(p)


def add_preset_flag(p: argparse.ArgumentParser) -> None:
    """`--preset NAME`: a device's available memory and, unless --backend is given, its
    backend (CUDA for an NVIDIA card, ROCm for an AMD one, Metal for Apple silicon)."""
    p.add_argument(
        "--preset",
        choices=preset_keys(),
        default=None,
        help="available memory of a device preset (MLX's limit on that device); also its "
        "backend (NVIDIA: cuda, AMD: rocm, Apple: metal) unless --backend is given; "
        "not with --memory-limit",
    )


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by `measure` and `table`."""
    p.add_argument(
        "--quiet",
        action="store_true",
        help="show no progress on stderr (on a terminal a live display of load, prefill and "
        "decode with tokens/s; otherwise one line per phase as it starts and ends, with its "
        "seconds), nor the child's notices; warnings and errors still show",
    )
    p.add_argument(
        "--gen-tokens",
        type=token_count("--gen-tokens", 0, MAX_MEASURED_TOKENS),
        default=DEFAULT_GEN_TOKENS,
        metavar="G",
        help=f"greedy decode tokens of the measured pass (default {DEFAULT_GEN_TOKENS})",
    )
    p.add_argument(
        "--warmup-tokens",
        type=token_count("--warmup-tokens", 0, MAX_MEASURED_TOKENS),
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
    add_engine_option_flags(p)
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


def engine_option_flag(option: EngineOption) -> str:
    """The flag of an engine's option: its name with dashes (`fuse_bf16`: `--fuse-bf16`)."""
    return "--" + option.name.replace("_", "-")


def add_engine_option_flags(p: argparse.ArgumentParser) -> None:
    """One flag per option each engine declares (`core.measurement.engine`): its choices,
    its default, and its words after the engine's label; the parsed value is the
    request field of the option's name (`measure_args.engine_option_values`)."""
    for engine in Engine:
        for option in engine.spec.options:
            p.add_argument(
                engine_option_flag(option),
                dest=option.name,
                choices=option.choices,
                default=option.default,
                help=f"{engine.label}: {option.doc} (default {option.default})",
            )


def add_parallel_flags(p: argparse.ArgumentParser, measure: bool = False) -> None:
    """`--tp N | --pp N` (2 to 8 ranks to measure; 1 to 8 to estimate, where one rank is
    the single device in the plan's form)."""
    least = 2 if measure else 1
    group = p.add_mutually_exclusive_group()
    then = (
        "; with --engine mlx, N ranks under mlx.launch --backend ring on the loopback"
        if measure
        else "; --memory-limit then takes one size or one per rank (SIZE,SIZE,...)"
    )
    group.add_argument(
        "--tp",
        type=int_at_least("--tp", least),
        default=None,
        metavar="N",
        help=f"tensor parallel over N ranks ({least}-{MAX_RANKS}), as mlx-lm's Model.shard(){then}",
    )
    group.add_argument(
        "--pp",
        type=int_at_least("--pp", least),
        default=None,
        metavar="N",
        help=f"pipeline parallel over N ranks ({least}-{MAX_RANKS}), as mlx-lm's model.pipeline()",
    )
    if measure:
        p.add_argument(
            "--hostfile",
            default=None,
            metavar="FILE",
            help="with --tp/--pp: MLX's own hostfile (JSON, one host entry per rank) passed "
            "to mlx.launch instead of the loopback default",
        )


def add_hub_timeout_flag(p: argparse.ArgumentParser) -> None:
    """`--hub-timeout SECONDS` (inspect's Hub reads, models --hub's search)."""
    p.add_argument(
        "--hub-timeout",
        type=duration_seconds("--hub-timeout"),
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up on a Hub request after this long (default {DEFAULT_TIMEOUT_S:g})",
    )


def add_hub_flags(p: argparse.ArgumentParser) -> None:
    """`--revision`, `--offline`, `--hub-timeout`: how a repo id not on disk is read."""
    p.add_argument(
        "--revision",
        metavar="REV",
        default=None,
        help="branch, tag or commit to read from the Hub (default main)",
    )
    p.add_argument(
        "--offline",
        action="store_true",
        help="never reach the Hub: answer from what was read before (as HF_HUB_OFFLINE=1)",
    )
    add_hub_timeout_flag(p)


def hub_options(args: argparse.Namespace) -> HubOptions:
    """The Hub flags as options, with progress lines on stderr."""
    from core.hub.options import HubOptions

    def progress(line: str) -> None:
        print(f"vramscope: {clean_text(line)}", file=sys.stderr, flush=True)

    revision = args.revision
    if revision is not None and not revision.strip():
        raise UsageError("--revision", "is empty")
    return HubOptions(
        revision=revision, offline=args.offline, timeout_s=args.hub_timeout, progress=progress
    )
