"""`vramscope run -- llama-server ...`: llama.cpp's own buffer lines (its `--log-file`,
else its stderr, which `run` tees) beside vramscope's load for the same flags and the
kernel's peak (#40)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.display_text import clean_text

if TYPE_CHECKING:
    from core.measurement.fields import LlamaCppBuffer
    from core.measurement.result import MeasuredPeak

LOG_CAP = 64 * 1024 * 1024
"""The most of a llama.cpp log read (its buffer lines come in the first kilobytes)."""


@dataclass(frozen=True)
class LlamaBeside:
    """What the run's end prints for a llama.cpp command, and its JSON."""

    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    json: dict[str, Any] | None = None
    buffers: tuple[LlamaCppBuffer, ...] | None = None
    """What the history records (None: no load was sized)."""
    arch: str | None = None
    """The GGUF's architecture the load was sized for (recorded beside the buffers)."""
    flash_attn: bool | None = None
    """Whether the load counted flash attention."""

    def record_into(self, extra: dict[str, Any]) -> dict[str, Any]:
        """`extra` with the buffers, the architecture and flash attention recorded."""
        if self.buffers is None:
            return extra
        out = dict(extra)
        out["llama_cpp_buffers"] = [b.to_json() for b in self.buffers]
        out["llama_cpp_arch"] = self.arch
        out["llama_cpp_flash_attn"] = self.flash_attn
        return out


def is_llama_command(command: list[str]) -> bool:
    """True for llama-server, llama-cli, llama-completion: `run` keeps their stderr."""
    from core.gguf_load.run import read_llama_command

    return read_llama_command(command) is not None


def llama_beside(
    command: list[str], peak: MeasuredPeak | None, stderr_text: str | None = None
) -> LlamaBeside | None:
    """None when the command is not llama.cpp's; else the lines (or why there are none).
    Called once the command has ended (its log is whole), before the run is recorded;
    `stderr_text` is the start of its stderr as `run` kept it (read when no --log-file)."""
    from core.catalog.gguf_source import cached_gguf
    from core.errors import VramscopeError
    from core.gguf.local import read_gguf_model
    from core.gguf_load.answer import ctx_size
    from core.gguf_load.run import beside_json, beside_lines, compare, read_llama_command
    from core.load.llama_cpp import FlashAttn, plan_for_model
    from core.load.llama_cpp_log import LlamaCppLog, parse_llama_log
    from core.measurement.fields import LlamaCppBuffer
    from core.regular_file import read_regular

    llama = read_llama_command(command)
    if llama is None:
        return None
    out = LlamaBeside(notes=list(llama.notes))
    name = llama.model or llama.hf_repo
    if name is None:
        out.notes.append("no -m FILE.gguf or -hf REPO: vramscope's load is not sized")
        return out
    try:
        if llama.model is not None:
            model = read_gguf_model(Path(llama.model))
        else:
            cached = cached_gguf(name)
            if cached is None:
                out.notes.append(
                    f"-hf {name}: not in the Hugging Face cache whole, so vramscope's load "
                    "is not sized (give -m FILE.gguf)"
                )
                return out
            model = cached.model
        plan = plan_for_model(model, llama.options)
        ctx = ctx_size(llama.tokens, plan, model.architecture)
        load = plan.at(ctx.tokens)
    except VramscopeError as exc:
        out.warnings.append(f"no llama.cpp load for {name}: {exc}")
        return out
    log = None
    where = f"its --log-file {llama.log_file}"
    if llama.log_file is not None:
        try:
            text = read_regular(Path(llama.log_file), LOG_CAP)[:LOG_CAP]
            log = parse_llama_log(text.decode("utf-8", errors="replace"))
        except (OSError, VramscopeError) as exc:
            out.warnings.append(f"llama.cpp's log {llama.log_file} not read: {exc}")
    elif stderr_text is not None:
        where = "its stderr"
        log = parse_llama_log(stderr_text)
    else:
        where = "no log"
    if log is not None and not log.found:
        out.notes.append(
            f"no buffer lines in {where}: llama.cpp writes them at its default verbosity "
            "or with -v (--verbose); a --log-disable or -lv below 3 hides them"
        )
        log = None
    peak_bytes = peak.peak_bytes if peak is not None else None
    peak_kind = peak.peak_kind if peak is not None else ""
    source = where if log is not None else "no log read"
    out.lines.append(
        f"llama.cpp's own buffers ({source}) beside vramscope's load (llama.cpp) at "
        f"{ctx.tokens:,} tokens, {plan.offloaded_layers} of {plan.hparams.n_layer + 1} "
        "layers offloaded:"
    )
    rows = compare(log if log is not None else LlamaCppLog((), (), (), (), (), (), ()), load)
    out.lines.extend(beside_lines(rows, peak_bytes, peak_kind))
    json_doc = {
        "model": name,
        "tokens": ctx.tokens,
        "log_file": llama.log_file,
        "log_read": log is not None,
        "log_source": ("log_file" if llama.log_file else "stderr") if log is not None else None,
        "n_gpu_layers": plan.offloaded_layers,
        "layer_count": plan.hparams.n_layer + 1,
        "terms": beside_json(rows),
        "llama_cpp_total_bytes": sum(r.llama_cpp or 0 for r in rows) if log else None,
        "vramscope_total_bytes": sum(r.vramscope for r in rows),
        "kernel_peak_bytes": peak_bytes,
        "notes": out.notes,
    }
    buffers = tuple(LlamaCppBuffer(r.kind, r.placement, r.llama_cpp, r.vramscope) for r in rows)
    lines = [clean_text(x) for x in out.lines]
    flash = plan.options.flash_attn is FlashAttn.ON
    json_doc["architecture"] = plan.hparams.arch
    json_doc["flash_attn"] = flash
    return LlamaBeside(out.notes, out.warnings, lines, json_doc, buffers, plan.hparams.arch, flash)
