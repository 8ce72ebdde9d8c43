"""`vramscope device`: every memory figure of this machine side by side, each with
its source, and the budget `--memory-limit free|total`, `fit` and the explorer's
"This device" take from them (`core.device.figures`, one computation)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.backend import BACKEND_CHOICES, backend_choice
from core.device.figures import DeviceFigures, Runtime, read_device_figures
from core.display_text import clean_text
from core.estimate.available import AvailableMemory
from core.units import format_bytes_short
from tui.commands.registry import help_line


def register(sub: Any) -> None:
    """Add the `device` parser."""
    p = sub.add_parser(
        "device",
        help=help_line("device"),
        description="Print VRAM and GTT (amdgpu sysfs), the TTM pages limit, MemTotal and "
        "MemAvailable, what torch and MLX would report (each asked in a child process, "
        "when installed), and the budget vramscope uses for --memory-limit free|total and why.",
    )
    p.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default=BACKEND_CHOICES[0],
        help="the device's backend (auto: this machine's, by its device nodes)",
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument(
        "--presets",
        action="store_true",
        help="list every --preset with its figure, its source and what it assumes "
        "(reads nothing of this machine)",
    )
    p.add_argument(
        "--no-runtimes",
        action="store_true",
        help="do not ask torch or MLX (each starts a child interpreter: seconds)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`vramscope device`: the figures, then the budget."""
    if args.presets:
        return _print_presets(args.json)
    from core.probes.device_nodes import detect_backend

    backend = backend_choice(args.backend) or detect_backend().backend
    figures = read_device_figures(backend, ask_runtimes=not args.no_runtimes)
    if args.json:
        print(json.dumps(figures_json(figures), indent=2))
    else:
        print("\n".join(clean_text(line) for line in figures_lines(figures)))
    return 0


def _print_presets(as_json: bool) -> int:
    """`vramscope device --presets`: each preset's figure, source and assumptions."""
    from core.answer.presets import PRESETS

    if as_json:
        rows = [
            {
                "preset": p.key,
                "label": p.label,
                "bytes": p.bytes,
                "backend": p.backend.value,
                "gfx": p.gfx,
                "source": p.source,
                "assumes": p.assumes,
            }
            for p in PRESETS
        ]
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(p.key) for p in PRESETS)
    for p in PRESETS:
        print(
            f"{p.key:<{width}}  {format_bytes_short(p.bytes):>10}  {p.backend.value:<5}  {p.label}"
        )
        print(f"{'':<{width}}  from: {p.source}")
        print(f"{'':<{width}}  assumes: {p.assumes}")
    print()
    print(
        "Each is `--preset KEY` of inspect, fit and measure, and the explorer's Available "
        "choices; `vramscope device` reads this machine's own figures."
    )
    return 0


def _size(value: int | str | None) -> str:
    if value is None:
        return "not read"
    if isinstance(value, str):
        return f"not read: {value}"
    return f"{format_bytes_short(value)} ({value:,} bytes)"


def _row(what: str, value: str, source: str) -> str:
    return f"  {what:<16} {value}  [{source}]"


def figures_lines(f: DeviceFigures) -> list[str]:
    """The text of `vramscope device`: one figure a line, its source in brackets."""
    lines = [f"Memory figures ({f.backend.value}), each with its source:"]
    if not f.cards:
        lines.append(_row("amdgpu", "no card reports its memory", str(f.sys_root / "class/drm")))
    for card in f.cards:
        kind = "APU" if card.apu else "discrete"
        lines.append(f"  {card.label}, {kind}:")
        for stem, pool in (("vram", card.vram), ("gtt", card.gtt)):
            source = f"{f.card_path(card)}/mem_info_{stem}_total, _used"
            value = (
                "not read"
                if pool is None
                else (
                    f"total {format_bytes_short(pool.total)}, used {format_bytes_short(pool.used)}"
                )
            )
            lines.append(_row(f"  {stem.upper()}", value, source))
    if f.ttm is None:
        lines.append(
            _row(
                "TTM limit", "not read (no ttm module or 0: the kernel's default)", str(f.ttm_path)
            )
        )
    else:
        value = f"{f.ttm.pages:,} pages x {f.ttm.page_size} B = {format_bytes_short(f.ttm.bytes)}"
        lines.append(_row("TTM limit", value, str(f.ttm_path)))
    lines.append(_row("MemTotal", _size(f.mem_total), str(f.meminfo_path)))
    lines.append(_row("MemAvailable", _size(f.mem_available), str(f.meminfo_path)))
    lines.append(_row("torch", _torch_words(f.torch), "torch.cuda in a child process"))
    lines.append(_row("MLX", _mlx_words(f.mlx), "mx.device_info() in a child process"))
    lines.append("")
    if f.device is None or f.free is None or f.total is None:
        lines.append("vramscope budget: none (no device memory is readable); give a size")
        return lines
    lines.append(f"vramscope device: {f.device.line.removeprefix('Device: ')}")
    lines.append(_budget("free", f.free))
    lines.append(_budget("total", f.total))
    if f.fix is not None:
        lines.append(f"vramscope fix: {f.fix}")
    return lines


def _budget(which: str, budget: AvailableMemory) -> str:
    return (
        f"vramscope budget --memory-limit {which}: {format_bytes_short(budget.bytes)} "
        f"({budget.bytes:,} bytes): {budget.source}"
    )


def _runtime_words(runtime: Runtime) -> str | None:
    """Why a runtime has no answer to show (None: it answered)."""
    if not runtime.installed:
        return "not installed"
    if not runtime.asked:
        return "installed, not asked (--no-runtimes)"
    if runtime.torch is None and runtime.mlx is None:
        return "installed, gave no answer"
    return None


def _torch_words(runtime: Runtime) -> str:
    t = runtime.torch
    if t is None:
        return _runtime_words(runtime) or ""
    if t.name is None:
        return f"{t.version}: no GPU (torch.cuda.is_available() is False)"
    return (
        f"{t.version}, {t.name}: mem_get_info free {_opt(t.free)}, total {_opt(t.total)}; "
        f"total_memory {_opt(t.total_memory)}"
    )


def _mlx_words(runtime: Runtime) -> str:
    m = runtime.mlx
    if m is None:
        return _runtime_words(runtime) or ""
    size = _opt(m.memory_size) if m.memory_size is not None else "not reported"
    return f"{m.name} {m.device}: memory_size {size}, get_memory_limit {_opt(m.memory_limit)}"


def _opt(value: int | None) -> str:
    return "not reported" if value is None else format_bytes_short(value)


def _figure(value: int | str | None, source: str) -> dict[str, Any]:
    if isinstance(value, int):
        return {"bytes": value, "source": source}
    return {"bytes": None, "source": source, "unread": value or "not read"}


def figures_json(f: DeviceFigures) -> dict[str, Any]:
    """`vramscope device --json`: each figure as {bytes, source}, then the budget."""
    cards = []
    for card in f.cards:
        entry: dict[str, Any] = {
            "card": card.card,
            "name": card.name,
            "gfx_target": card.gfx_target,
            "apu": card.apu,
        }
        for stem, pool in (("vram", card.vram), ("gtt", card.gtt)):
            source = f"{f.card_path(card)}/mem_info_{stem}_total, _used"
            entry[stem] = (
                None
                if pool is None
                else {"total_bytes": pool.total, "used_bytes": pool.used, "source": source}
            )
        cards.append(entry)
    ttm = None
    if f.ttm is not None:
        ttm = {
            "pages": f.ttm.pages,
            "page_size": f.ttm.page_size,
            "bytes": f.ttm.bytes,
            "source": str(f.ttm_path),
        }
    budget = None
    if f.device is not None and f.free is not None and f.total is not None:
        budget = {
            "device": f.device.json(),
            "terms": f.device.json()["free_terms"],
            "free": {"bytes": f.free.bytes, "source": f.free.source},
            "total": {"bytes": f.total.bytes, "source": f.total.source},
            "fix": f.fix,
        }
    return {
        "backend": f.backend.value,
        "cards": cards,
        "ttm_limit": ttm,
        "mem_total": _figure(f.mem_total, str(f.meminfo_path)),
        "mem_available": _figure(f.mem_available, str(f.meminfo_path)),
        "torch": _runtime_json(f.torch),
        "mlx": _runtime_json(f.mlx),
        "budget": budget,
    }


def _runtime_json(runtime: Runtime) -> dict[str, Any]:
    out: dict[str, Any] = {"installed": runtime.installed, "asked": runtime.asked}
    if runtime.torch is not None:
        t = runtime.torch
        out |= {
            "version": t.version,
            "name": t.name,
            "mem_get_info_free": t.free,
            "mem_get_info_total": t.total,
            "total_memory": t.total_memory,
        }
    if runtime.mlx is not None:
        m = runtime.mlx
        out |= {
            "name": m.name,
            "device": m.device,
            "memory_size": m.memory_size,
            "memory_limit": m.memory_limit,
        }
    return out
