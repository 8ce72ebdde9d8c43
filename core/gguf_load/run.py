"""`vramscope run -- llama-server ...` (#40): llama.cpp's own buffer lines beside
vramscope's load for the same command, and the kernel's peak.

`read_llama_command` reads a llama.cpp command line (`llama-server`, `llama-cli`,
`llama-completion`) for what changes its memory, under llama.cpp's own flags and
defaults (llama-server's `--parallel` auto: 4 slots on one unified cache; `-c 0` or no
`-c`: the trained context); `--log-file FILE` is where llama.cpp writes its log, read
after the run (`core.load.llama_cpp_log`), else its stderr as `run` tee'd it. `compare`
holds each buffer llama.cpp printed (model, KV, output, compute; per place: the device,
or the host for `CPU*` and `*_Host` buffers) against vramscope's share of the same term.
Pure: argv and text in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from core.errors import UsageError
from core.load.llama_cpp import (
    LLAMA_SERVER_DEFAULTS,
    FlashAttn,
    KvCacheType,
    LlamaCppOptions,
)
from core.load.llama_cpp_log import PRINTED_RESOLUTION_BYTES, LlamaCppBufferKind, LlamaCppLog
from core.load.load import EngineLoad, Placement, TermKind
from core.units import format_bytes_short

PROGRAMS = ("llama-server", "llama-cli", "llama-completion")
_VALUED = {
    "-m": "model", "--model": "model",
    "-c": "ctx", "--ctx-size": "ctx",
    "-ngl": "ngl", "--gpu-layers": "ngl", "--n-gpu-layers": "ngl",
    "-ctk": "ctk", "--cache-type-k": "ctk",
    "-ctv": "ctv", "--cache-type-v": "ctv",
    "-np": "np", "--parallel": "np",
    "-ub": "ub", "--ubatch-size": "ub",
    "-b": "b", "--batch-size": "b",
    "--log-file": "log", "--mmproj": "mmproj",
    "-hf": "hf", "-hfr": "hf", "--hf-repo": "hf",
}  # fmt: skip
_SWITCHES = {"-kvu": "kvu", "--kv-unified": "kvu", "-nkvo": "nkvo", "--no-kv-offload": "nkvo",
             "--swa-full": "swa_full"}  # fmt: skip
TERMS = (
    (LlamaCppBufferKind.MODEL, (TermKind.WEIGHTS,)),
    (LlamaCppBufferKind.KV, (TermKind.KV,)),
    (LlamaCppBufferKind.OUTPUT, (TermKind.OUTPUT,)),
    (LlamaCppBufferKind.COMPUTE, (TermKind.COMPUTE,)),
)
"""llama.cpp's buffer kinds and vramscope's terms for each (the projector is mtmd's,
printed apart: not held here)."""


@dataclass(frozen=True)
class LlamaCommand:
    """What a llama.cpp command line says about its memory."""

    program: str
    model: str | None
    tokens: int | None
    """`-c` (None: not given or 0, the model's trained context)."""
    options: LlamaCppOptions
    log_file: str | None
    notes: tuple[str, ...] = ()
    """What was assumed or could not be read, one line each."""
    hf_repo: str | None = None
    """`-hf REPO[:QUANT]`: the model llama.cpp downloads to the Hugging Face cache."""


def _program(argv: Sequence[str]) -> str | None:
    for word in argv[:3]:  # `env X=1 llama-server`, `./llama-server`
        name = word.rsplit("/", 1)[-1]
        if name in PROGRAMS:
            return name
    return None


def _int(text: str, least: int) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= least else None


def read_llama_command(argv: Sequence[str]) -> LlamaCommand | None:
    """The command's llama.cpp facts; None when it is not a llama.cpp program."""
    program = _program(argv)
    if program is None:
        return None
    start = next(i for i, w in enumerate(argv) if w.rsplit("/", 1)[-1] == program) + 1
    values: dict[str, str] = {}
    switches: set[str] = set()
    flash_bare = False
    words = list(argv[start:])
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-fa", "--flash-attn"):
            nxt = words[i + 1] if i + 1 < len(words) else ""
            if nxt.lower() in ("on", "off", "auto"):
                values["fa"] = nxt.lower()
                i += 2
            else:  # the older bare switch
                flash_bare = True
                i += 1
            continue
        if word in _VALUED and i + 1 < len(words):
            values[_VALUED[word]] = words[i + 1]
            i += 2
            continue
        if word in _SWITCHES:
            switches.add(_SWITCHES[word])
        i += 1
    notes: list[str] = []
    base = LLAMA_SERVER_DEFAULTS if program == "llama-server" and "np" not in values else None
    options = base or LlamaCppOptions()
    if base is not None:
        notes.append("no -np: llama-server's auto, 4 slots on one unified cache")

    def set_option(flag: str, **change: object) -> None:
        nonlocal options
        try:
            options = replace(options, **change)  # type: ignore[arg-type]
        except UsageError as exc:
            notes.append(f"{flag}: {exc}; llama.cpp's default counted")

    ngl = values.get("ngl", "auto").lower()
    if ngl in ("auto", "all") or (_int(ngl, -99) or 0) < 0:
        if ngl == "auto":
            notes.append("no -ngl (or auto): llama.cpp's --fit picks the layers; all counted")
        set_option("-ngl", n_gpu_layers=-1)
    elif (n := _int(ngl, 0)) is not None:
        set_option("-ngl", n_gpu_layers=n)
    else:
        notes.append(f"-ngl {ngl!r} not read; all counted")
    for key, flag, field in (("np", "-np", "parallel"), ("ub", "-ub", "ubatch_size"),
                             ("b", "-b", "batch_size")):  # fmt: skip
        if key in values:
            if (n := _int(values[key], 1)) is None:
                notes.append(f"{flag} {values[key]!r} not read; llama.cpp's default counted")
            else:
                set_option(flag, **{field: n})
    if "fa" in values or flash_bare:
        set_option("-fa", flash_attn=FlashAttn.OFF if values.get("fa") == "off" else FlashAttn.ON)
    for key, flag, field in (("ctk", "-ctk", "cache_type_k"), ("ctv", "-ctv", "cache_type_v")):
        if key in values:
            try:
                set_option(flag, **{field: KvCacheType.named(flag, values[key])})
            except UsageError as exc:
                notes.append(f"{exc}; f16 counted")
    if "kvu" in switches:
        set_option("-kvu", kv_unified=True)
    if "nkvo" in switches:
        set_option("-nkvo", kv_offload=False)
    if "swa_full" in switches:
        set_option("--swa-full", swa_full=True)
    tokens = _int(values.get("ctx", "0"), 0) or None
    return LlamaCommand(
        program,
        values.get("model"),
        tokens,
        options,
        values.get("log"),
        tuple(notes),
        values.get("hf"),
    )


def placement_of(device: str) -> Placement:
    """Where a llama.cpp buffer lives: the host for `CPU`, `CPU_Mapped`, `ROCm_Host`..."""
    return Placement.HOST if "CPU" in device or device.endswith("_Host") else Placement.DEVICE


@dataclass(frozen=True)
class TermBeside:
    """One buffer kind at one place: llama.cpp's figure and vramscope's."""

    kind: LlamaCppBufferKind
    placement: Placement
    llama_cpp: int | None
    """None: llama.cpp printed no such buffer there."""
    vramscope: int
    lines: int = 0
    """How many of llama.cpp's lines the figure sums (each good to its 0.01 MiB)."""

    @property
    def within_print(self) -> bool:
        """vramscope's figure equals llama.cpp's within what its lines print."""
        if self.llama_cpp is None:
            return False
        return abs(self.vramscope - self.llama_cpp) <= PRINTED_RESOLUTION_BYTES * max(1, self.lines)


def compare(log: LlamaCppLog, load: EngineLoad) -> list[TermBeside]:
    """Each buffer kind at each place that either side has."""
    printed: dict[tuple[LlamaCppBufferKind, Placement], int] = {}
    lines: dict[tuple[LlamaCppBufferKind, Placement], int] = {}
    for kind, bufs in (
        (LlamaCppBufferKind.MODEL, log.model),
        (LlamaCppBufferKind.KV, log.kv_buffers + log.recurrent_buffers),
        (LlamaCppBufferKind.OUTPUT, log.output),
        (LlamaCppBufferKind.COMPUTE, log.compute),
    ):
        for b in bufs:
            key = (kind, placement_of(b.device))
            printed[key] = printed.get(key, 0) + b.bytes
            lines[key] = lines.get(key, 0) + 1
    ours: dict[tuple[LlamaCppBufferKind, Placement], int] = {}
    shares = load.shares
    for share in shares:
        for kind, kinds in TERMS:
            size = sum(t.bytes for t in share.terms if t.kind in kinds)
            if size:
                ours[(kind, share.placement)] = size
    out = []
    for placement in (Placement.DEVICE, Placement.HOST):
        for kind, _ in TERMS:
            key = (kind, placement)
            if key in printed or key in ours:
                out.append(
                    TermBeside(
                        kind, placement, printed.get(key), ours.get(key, 0), lines.get(key, 0)
                    )
                )
    return out


def beside_lines(rows: Sequence[TermBeside], peak_bytes: int | None, peak_kind: str) -> list[str]:
    """The rows in words, then the totals beside the kernel's peak."""
    lines = []
    for r in rows:
        theirs = format_bytes_short(r.llama_cpp) if r.llama_cpp is not None else "none printed"
        diff = ""
        if r.within_print:
            diff = " (equal, to the 0.01 MiB llama.cpp prints)"
        elif r.llama_cpp:
            diff = f" ({(r.vramscope - r.llama_cpp) / r.llama_cpp:+.1%})"
        lines.append(
            f"  {r.placement.value:<6} {r.kind.value:<8} llama.cpp {theirs:>12}   vramscope "
            f"{format_bytes_short(r.vramscope):>12}{diff}"
        )
    printed = sum(r.llama_cpp or 0 for r in rows)
    ours = sum(r.vramscope for r in rows)
    peak = f"{format_bytes_short(peak_bytes)} ({peak_kind})" if peak_bytes is not None else "none"
    lines.append(
        f"  total           llama.cpp {format_bytes_short(printed):>12}   vramscope "
        f"{format_bytes_short(ours):>12}   the kernel's peak {peak}"
    )
    return lines


def beside_json(rows: Sequence[TermBeside]) -> list[dict[str, object]]:
    """The rows for `run --json`'s `llama_cpp` object."""
    return [
        {
            "kind": r.kind.value,
            "placement": r.placement.value,
            "llama_cpp_bytes": r.llama_cpp,
            "vramscope_bytes": r.vramscope,
        }
        for r in rows
    ]
