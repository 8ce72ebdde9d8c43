"""llama.cpp's flags for a GGUF model, under llama.cpp's own long names (#40):
`--n-gpu-layers`, `--cache-type-k`, `--cache-type-v`, `--parallel`, `--ubatch-size`,
`--flash-attn`, `--kv-unified`, `--no-kv-offload`, `--swa-full`; `--max-tokens` is
llama.cpp's `--ctx-size` (`-c`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from core.errors import UsageError
from core.estimate.estimate import KvCacheMode

if TYPE_CHECKING:
    from core.load.llama_cpp import LlamaCppOptions

FLAG_DESTS = {
    "n_gpu_layers": "--n-gpu-layers",
    "cache_type_k": "--cache-type-k",
    "cache_type_v": "--cache-type-v",
    "parallel": "--parallel",
    "ubatch_size": "--ubatch-size",
    "flash_attn": "--flash-attn",
    "kv_unified": "--kv-unified",
    "no_kv_offload": "--no-kv-offload",
    "swa_full": "--swa-full",
}
FLASH_ATTN_CHOICES = ("on", "off", "auto")


def add_llama_cpp_flags(p: argparse.ArgumentParser) -> None:
    """The flags, each None (or False) when not given, so a safetensors model can refuse them."""
    from tui.commands.shared.flags import token_count

    g = p.add_argument_group("llama.cpp (a GGUF model; llama.cpp's own flag names)")
    g.add_argument(
        "--ctx-size",
        "-c",
        dest="max_tokens",
        type=token_count("--ctx-size", 0),
        default=argparse.SUPPRESS,  # --max-tokens' default stands
        metavar="N",
        help="llama.cpp's name for --max-tokens (0: the model's trained context)",
    )
    g.add_argument(
        "--n-gpu-layers",
        "-ngl",
        metavar="N|all",
        default=None,
        help="layers offloaded to the device, the output layer first then from the last "
        "(-1 or all: every layer; default all)",
    )
    g.add_argument(
        "--cache-type-k",
        "-ctk",
        metavar="TYPE",
        default=None,
        help="K cache type: f16 (default), q8_0, q4_0, bf16, f32, q4_1, iq4_nl, q5_0, q5_1",
    )
    g.add_argument(
        "--cache-type-v",
        "-ctv",
        metavar="TYPE",
        default=None,
        help="V cache type, as --cache-type-k (quantized needs --flash-attn on)",
    )
    g.add_argument(
        "--parallel",
        "-np",
        metavar="N",
        default=None,
        help="sequences (server slots) at once; each holds --max-tokens / N "
        "cells unless --kv-unified (default 1)",
    )
    g.add_argument(
        "--ubatch-size",
        "-ub",
        metavar="N",
        default=None,
        help="physical batch: sizes the compute buffer (default 512)",
    )
    g.add_argument(
        "--flash-attn",
        "-fa",
        metavar="on|off|auto",
        default=None,
        help="flash attention (default on; auto is on, as llama.cpp turns it on "
        "where the device supports it)",
    )
    g.add_argument(
        "--no-kv-offload",
        "-nkvo",
        action="store_true",
        default=False,
        help="the whole KV cache on the host, whatever --n-gpu-layers offloads",
    )
    g.add_argument(
        "--swa-full",
        action="store_true",
        default=False,
        help="sliding-window layers sized for the full context",
    )
    g.add_argument(
        "--kv-unified",
        "-kvu",
        action="store_true",
        default=False,
        help="one KV cache shared by the --parallel sequences",
    )


def given_flags(args: argparse.Namespace) -> list[str]:
    """The llama.cpp flags given (for refusing them on a model that is not a GGUF)."""
    return [flag for dest, flag in FLAG_DESTS.items() if getattr(args, dest, None)]


def mlxcel_flags_given(args: argparse.Namespace) -> list[str]:
    """mlxcel's flags given away from their defaults (for refusing them on a GGUF, whose
    load is llama.cpp's: it has no quantization label, batch, int8 KV mode or MLX
    in-flight reserve)."""
    quant = getattr(args, "quant", "default")
    given = (
        ("--quant", isinstance(quant, str) and quant.strip().lower() != "default"),
        ("--batch", getattr(args, "batch", 1) != 1),
        (
            "--kv-cache-mode",
            KvCacheMode.named(getattr(args, "kv_cache_mode", KvCacheMode.FP16)).int8,
        ),
        ("--inflight-mb", getattr(args, "inflight_mb", None) is not None),
    )
    return [flag for flag, on in given if on]


def refuse_mlxcel_flags(args: argparse.Namespace) -> None:
    """A one-line UsageError for the first of mlxcel's flags given with a GGUF."""
    given = mlxcel_flags_given(args)
    if given:
        raise UsageError(
            given[0],
            "is mlxcel's; for a GGUF give llama.cpp's flags (--parallel, --cache-type-k/-v)",
        )


def _int(flag: str, text: str, least: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise UsageError(flag, f"{text!r} is not a whole number") from None
    if value < least:
        raise UsageError(flag, f"{value} is below {least}")
    return value


@dataclass(frozen=True)
class LlamaCppFlags:
    """The options read from the flags, and what a flag's value was taken to mean."""

    options: LlamaCppOptions
    notes: tuple[str, ...]


def llama_cpp_options(args: argparse.Namespace) -> LlamaCppFlags:
    """`LlamaCppOptions` from the flags; one-line usage errors naming the flag."""
    from core.load.llama_cpp import FlashAttn, KvCacheType, LlamaCppOptions

    notes: list[str] = []
    o = LlamaCppOptions()
    ngl = args.n_gpu_layers
    if ngl is not None:
        word = ngl.strip().lower()
        if word == "auto":
            raise UsageError(
                "--n-gpu-layers",
                "auto is llama.cpp's own --fit; give a number or all (vramscope reports the "
                "largest that fits)",
            )
        o = replace(o, n_gpu_layers=-1 if word == "all" else _int("--n-gpu-layers", word, -1))
    if args.cache_type_k is not None:
        o = replace(o, cache_type_k=KvCacheType.named("--cache-type-k", args.cache_type_k))
    if args.parallel is not None:
        o = replace(o, parallel=_int("--parallel", args.parallel, 1))
    if args.ubatch_size is not None:
        ub = _int("--ubatch-size", args.ubatch_size, 1)
        # llama.cpp's n_batch is at least n_ubatch
        o = replace(o, ubatch_size=ub, batch_size=max(ub, o.batch_size))
    if args.flash_attn is not None:
        word = args.flash_attn.strip().lower()
        if word not in FLASH_ATTN_CHOICES:
            raise UsageError("--flash-attn", f"{args.flash_attn!r}: choose on, off or auto")
        if word == "auto":
            notes.append(
                "--flash-attn auto counted as on: llama.cpp turns it on where the device "
                "supports it (ROCm, Vulkan, CUDA, Metal and the CPU do)"
            )
        o = replace(o, flash_attn=FlashAttn.OFF if word == "off" else FlashAttn.ON)
    if args.cache_type_v is not None:  # after --flash-attn: a quantized V needs it on
        o = replace(o, cache_type_v=KvCacheType.named("--cache-type-v", args.cache_type_v))
    if args.kv_unified:
        o = replace(o, kv_unified=True)
    if args.no_kv_offload:
        o = replace(o, kv_offload=False)
    if args.swa_full:
        o = replace(o, swa_full=True)
    return LlamaCppFlags(o, tuple(notes))
