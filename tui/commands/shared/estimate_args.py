"""What the estimate commands build from their parsed flags: the question (`inspect`,
`inspect --tp/--pp`, `fit`: the device through the one resolution the explorer uses) and
the explorer's launch options (`explore`, `screenshot`), and the flags' usage errors
argparse cannot check."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, replace

from core.answer.device import (
    DeviceRequest,
    MachineReadings,
    MemoryRequest,
    MemorySource,
    device_memory_choice,
    resolve_backend,
    resolve_device,
)
from core.answer.question import ONE_DEVICE, Question, Split
from core.backend import backend_choice
from core.device.available import read_available_memory
from core.device.reading import read_card, read_device_memory, unread_words
from core.environment import read_env, resolve_settings
from core.errors import UsageError
from core.estimate.available import MEMORY_LIMIT_ENV
from core.estimate.estimate import KvCacheMode, QuantHint, Workload, parse_quant_hint
from core.numbers import rust_trim
from core.probes.device_nodes import detect_backend
from core.value_grammar import Refused, read_byte_size
from tui.commands.shared.output import warn
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


def check_preset(args: argparse.Namespace) -> str | None:
    """`--preset`, refused beside `--memory-limit` (both say how much is available)."""
    preset: str | None = getattr(args, "preset", None)
    if preset is not None and args.memory_limit is not None:
        raise UsageError("--preset", "sets the available memory; give it or --memory-limit")
    return preset


def device_request(args: argparse.Namespace, *, per_rank: bool = False) -> DeviceRequest:
    """The device the flags ask for: `--backend` (auto: the preset's, else this
    machine's) and where the available memory comes from (`--preset`, `--memory-limit
    SIZE|free|total`, else mlxcel's detection); with `per_rank`, a `--memory-limit` list
    is each rank's (`split_limits`), not the device's."""
    preset = check_preset(args)
    backend = backend_choice(args.backend)
    text = (args.memory_limit or "").strip().lower()
    if preset is not None:
        memory = MemoryRequest(MemorySource.PRESET, preset=preset)
    elif (source := device_memory_choice(text)) is not None:
        memory = MemoryRequest(source)
    elif per_rank and args.memory_limit is not None and "," in args.memory_limit:
        memory = MemoryRequest()
    else:
        limit = parse_memory_limit_flag(args.memory_limit)
        memory = MemoryRequest(MemorySource.SIZE, size=limit) if limit else MemoryRequest()
    return DeviceRequest(backend, "--backend", memory)


def read_machine(
    request: DeviceRequest, env: Mapping[str, str | None], *, identify: bool = False
) -> MachineReadings:
    """What this machine's probes say for the request: its backend, mlxcel's detected
    memory (when that is the source), the device's reading (`free`/`total`; with
    `identify`, the card's name and gfx target, for choosing a calibration)."""
    machine = MachineReadings(detect_backend())
    backend, _, _ = resolve_backend(request, machine)
    source = request.memory.source
    available = None
    if source is MemorySource.DETECTED:
        available = read_available_memory(backend, env_limit=env.get(MEMORY_LIMIT_ENV))
    device = None
    if source in (MemorySource.DEVICE_FREE, MemorySource.DEVICE_TOTAL):
        device = read_device_memory(backend)
        if device is None:
            raise UsageError(
                "--memory-limit", f"{source.value}: {unread_words(backend)}; give a size instead"
            )
        return MachineReadings(machine.detected, available, device)
    if identify and backend is machine.detected.backend:
        device = read_card(backend)
    return MachineReadings(machine.detected, available, device)


@dataclass(frozen=True)
class QuestionInputs:
    """The question the flags ask (all but the model), and the lines about its inputs."""

    question: Question
    warnings: tuple[str, ...]
    """Environment values and flags that fell back."""
    notes: tuple[str, ...]
    """What the device reading noted."""


def question_from_args(
    args: argparse.Namespace,
    quant: QuantHint,
    *,
    identify: bool = False,
    split: Split = ONE_DEVICE,
) -> QuestionInputs:
    """`inspect`'s, `fit`'s and `inspect --tp/--pp`'s question, through the one device
    resolution the explorer uses (`core.answer.device.resolve_device`)."""
    env = read_env()
    request = device_request(args, per_rank=split.ranks > 1)
    machine = read_machine(request, env, identify=identify)
    device = resolve_device(request, machine)
    named = getattr(args, "calibration_device", None)
    if named is not None:  # the user names the device a calibration must be for
        device = replace(device, target=str(named))
    resolved = resolve_settings(
        device.backend, env, inflight_flag=args.inflight_mb, available=device.available
    )
    settings = resolved.settings
    question = Question(
        workload=Workload(
            max_tokens=args.max_tokens,
            batch=args.batch,
            kv_int8=KvCacheMode.named(args.kv_cache_mode, "--kv-cache-mode").int8,
            quant=quant,
        ),
        device=device,
        split=split,
        inflight_mib=settings.inflight_mib,
        headroom_factor=settings.headroom_factor,
        activation_mult=settings.activation_mult,
    )
    notes = device.reading.notes if device.reading is not None else ()
    return QuestionInputs(question, resolved.warnings, tuple(notes))


def launch_options(args: argparse.Namespace) -> LaunchOptions:
    """Validate the flags (one-line usage errors) and build the app's starting options."""
    quant = parse_quant_flag(args.quant)
    check_preset(args)
    device = (args.memory_limit or "").strip().lower()
    device_choice = device_memory_choice(device)
    limit = None if device_choice else parse_memory_limit_flag(args.memory_limit)
    return LaunchOptions(
        model=args.model,
        max_tokens=args.max_tokens,
        batch=args.batch,
        kv_int8=KvCacheMode.named(args.kv_cache_mode, "--kv-cache-mode").int8,
        quant=quant,
        backend=backend_choice(args.backend),
        inflight_raw=args.inflight_mb,
        memory_limit=limit,
        memory_device=device_choice,
        preset=args.preset,
        models_dirs=tuple(args.models_dir),
    )
