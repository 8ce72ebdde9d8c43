"""llama.cpp's load for a GGUF in words and JSON (`inspect`'s lines and `load` object).

The summary line is the mlx-lm load's own (`core.load.report.load_line`: `load (ENGINE):
weights, KV, transient, total at N tokens: VERDICT`) and the JSON key names and order
are its `load_json`'s (`engine`, `tokens`,
`weights_bytes`...), so the two engines read alike; llama.cpp's own terms (compute,
output, projector) and the device/host split under `--n-gpu-layers` follow. mlxcel
reads no GGUF, so its keys (`mlxcel_refuses`, `differs_from_mlxcel`) are null. Every
string from the file passes `clean_text` (text) or `json_safe` (JSON) here.
"""

from __future__ import annotations

from typing import Any

from core.answer.verdict import load_verdict_words
from core.display_text import clean_text, json_safe
from core.gguf_load.answer import GgufAnswer
from core.load.load import DeviceShare, LoadTerm, TermKind
from core.load.report import load_line, source_json, term_json
from core.units import format_bytes_short

PREFIX = "vramscope: "
NO_MLXCEL = (
    "mlxcel: no estimate and no banner: mlxcel reads safetensors, not GGUF; "
    "the load below is llama.cpp's, vramscope's own"
)


def _size(value: int) -> str:
    return f"{format_bytes_short(value)} ({value:,} bytes)"


def _share_words(share: DeviceShare) -> str:
    parts: dict[str, int] = {}
    for t in share.terms:
        parts[t.kind.value] = parts.get(t.kind.value, 0) + t.bytes
    inner = ", ".join(f"{k} {format_bytes_short(v)}" for k, v in parts.items())
    return f"{_size(share.total_bytes)}: {inner or 'nothing'}"


def gguf_load_lines(found: GgufAnswer) -> list[str]:
    """`inspect`'s vramscope lines for a GGUF: the load, each term, each place's share,
    the largest context, the largest `--n-gpu-layers` that fits, the command lines."""
    load, label = found.load, found.load.engine.label
    lines = [NO_MLXCEL, load_line(load, load_verdict_words(found.verdict))]
    lines.append(f"load ({label}) context: {load.tokens:,} tokens: {found.ctx.source}")
    for t in load.terms:
        lines.append(f"load ({label}) {t.kind.value}: {_size(t.bytes)}: {t.detail} [{_origin(t)}]")
    lines.append(f"load ({label}) --n-gpu-layers: {offload_words(found)}")
    for share in load.shares:
        lines.append(f"load ({label}) on the {share.placement.value}: {_share_words(share)}")
    lines.append(f"load ({label}) {held_words(found)}")
    lines.append(f"largest context by the load: {found.context.words}")
    fitting = gpu_layers_words(found)
    if fitting is not None:
        lines.append(f"largest --n-gpu-layers that fits: {fitting}")
    lines.append(f"llama-server: {found.command}")
    if found.fitting_command is not None:
        lines.append(f"llama-server that fits: {found.fitting_command}")
    lines += [f"load note: {n}" for n in load.notes]
    return [clean_text(PREFIX + line) for line in lines]


def offload_words(found: GgufAnswer) -> str:
    """`7 of 7 layers on the device (the output layer first, ...)`."""
    return (
        f"{found.plan.offloaded_layers} of {found.layer_count} layers on the device (the "
        "output layer first, then the repeating layers from the last)"
    )


def held_words(found: GgufAnswer) -> str:
    """`held against available 24.0 MiB (... bytes): the device's share, 25.2 MiB (...)`."""
    held = "the device's share" if found.plan.offloaded_layers else "the whole load (host only)"
    return (
        f"held against available {_size(found.available_bytes)}: {held}, {_size(found.held_bytes)}"
    )


def gpu_layers_words(found: GgufAnswer) -> str | None:
    """The largest `--n-gpu-layers` that fits, when the layers asked do not (None when
    they do, or memory was never read)."""
    if found.gpu_layers is None:
        return None
    if found.gpu_layers == 0:
        return "0: not even the output layer fits (llama.cpp on the host alone)"
    return f"{found.gpu_layers} of {found.layer_count} at {found.load.tokens:,} tokens"


def _origin(term: LoadTerm) -> str:
    return str(term.origin.value)


def gguf_load_json(found: GgufAnswer) -> dict[str, Any]:
    """The `load` object of `inspect --json` for a GGUF (the mlx-lm load's keys in their
    order, then llama.cpp's)."""
    load, o = found.load, found.plan.options
    out = {
        "engine": load.engine.label,
        "tokens": load.tokens,
        "weights_bytes": load.weights_bytes,
        "kv_bytes": load.kv_bytes,
        "compute_bytes": load.bytes_of(TermKind.COMPUTE),
        "output_bytes": load.bytes_of(TermKind.OUTPUT),
        "projector_bytes": load.bytes_of(TermKind.PROJECTOR),
        "transient_bytes": load.transient_bytes,
        "total_bytes": load.total_bytes,
        "fits": found.fits,
        "mlxcel_refuses": None,
        "largest_context": found.context.json(),
        "terms": [term_json(t) for t in load.terms],
        "sources": [source_json(s) for s in load.sources],
        "notes": list(load.notes),
        "differs_from_mlxcel": None,
        "tokens_source": found.ctx.source,
        "devices": [
            {
                "placement": s.placement.value,
                "total_bytes": s.total_bytes,
                "terms": [term_json(t) for t in s.terms],
            }
            for s in load.shares
        ],
        "held_bytes": found.held_bytes,
        "available_bytes": found.available_bytes,
        "n_gpu_layers": found.plan.offloaded_layers,
        "layer_count": found.layer_count,
        "largest_gpu_layers": found.gpu_layers,
        "options": {
            "n_gpu_layers": o.n_gpu_layers,
            "cache_type_k": o.cache_type_k.value,
            "cache_type_v": o.cache_type_v.value,
            "parallel": o.parallel,
            "ubatch_size": o.ubatch_size,
            "flash_attn": o.flash_attn.value,
            "kv_unified": o.kv_unified,
            "kv_offload": o.kv_offload,
            "swa_full": o.swa_full,
        },
        "llama_server": found.command,
        "llama_server_fits": found.fitting_command,
    }
    return dict(json_safe(out))
