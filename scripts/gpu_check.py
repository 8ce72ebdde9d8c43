"""First-run GPU check of the torch engine: what the machine is, and whether the numbers hold.

Prints, section by section (each timed; the whole run stays under 9 minutes on one GPU):
1. versions: Python, torch, HIP/CUDA, vramscope; the visible-device variables;
   the allocator settings (PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF);
2. the device: properties, PCI bus id, mem_get_info, the sysfs card picked for it
   (mem_info_vram_used / vram_total / gtt_used) and this process's fdinfo VRAM and GTT;
3. a 1 GiB probe: torch's allocated and reserved bytes and the device-used rise;
4. SDPA: the kernel torch picks and the peak of one call, for a first prompt chunk
   (causal) and a masked later chunk, in F16 and BF16 (1B-class shapes);
5. host run-ahead: how many kernels the host issues before the first one's event
   completes (what the in-flight bound exists for);
6. a ~1B 4-bit llama (real random weights) at contexts 640 and 4096 with in-flight
   budgets 0, 256 and 1024 MiB, MLX-ROCm's queue emulated (on CUDA too, said so):
   peak, reserved, device-used rise, max held, commits, waits, tokens/s, against the
   ROCm estimate.

    python scripts/gpu_check.py [--device auto|rocm|cuda] [--out FILE]
    python scripts/gpu_check.py --dry-run     # the same sections on the CPU, tiny shapes
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core import __version__  # noqa: E402
from core.backend import Backend  # noqa: E402
from core.measurement.fields import TorchFields  # noqa: E402
from core.measurement.request import MeasureRequest  # noqa: E402
from core.measurement.result import MeasuredPeak  # noqa: E402
from core.measurement.run import peak_or_failure  # noqa: E402
from hip_backend import measure, prepare, write_random_model  # noqa: E402
from hip_backend.torch_engine import (  # noqa: E402
    VISIBLE_DEVICE_VARIABLES,
    pick_card,
    read_int_file,
    read_process_drm_memory,
)
from scripts.gpu_table import SMALL_MODEL  # noqa: E402

TIME_BUDGET_S = 540.0
GIB = 1 << 30
MODEL_1B = SMALL_MODEL  # the ~1B 4-bit llama gpu_table.py measures too
FULL: dict[str, Any] = {
    "model": MODEL_1B,
    "contexts": (640, 4096),
    "budgets": (0, 256, 1024),
    "gen": 32,
    "warmup": 4,
    "probe": GIB,
    "sdpa": {"heads": 32, "kv_heads": 8, "head_dim": 64, "chunk": 512},
    "run_ahead": {"size": 4096, "ops": 2000},
}
DRY: dict[str, Any] = {
    "model": {
        **MODEL_1B,
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "intermediate_size": 512,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "vocab_size": 1024,
    },
    "contexts": (96,),  # one context: each row is a measuring child (2-3 s of CPU)
    "budgets": (0, 16, 64),
    "gen": 4,
    "warmup": 1,
    "probe": 64 << 20,
    "sdpa": {"heads": 8, "kv_heads": 2, "head_dim": 32, "chunk": 64},
    "run_ahead": {"size": 64, "ops": 50},
}


def mib(n: int | None) -> str:
    """Bytes as MiB with two decimals, or a dash."""
    return "-" if n is None else f"{n / (1 << 20):,.2f} MiB"


class Check:
    """Section bookkeeping: titles, timings, the time left, and the text for --out."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.lines: list[str] = []

    def left(self) -> float:
        return TIME_BUDGET_S - (time.perf_counter() - self.started)

    def say(self, text: str) -> None:
        print(text, flush=True)
        self.lines.append(text)

    def section(self, title: str, body: Callable[[], None]) -> None:
        self.say(f"\n## {title}")
        t0 = time.perf_counter()
        try:
            body()
        except Exception as exc:  # a check reports and goes on to the next section
            first = (str(exc).strip().splitlines() or [""])[0]
            self.say(f"FAILED: {type(exc).__name__}: {first}")
        self.say(f"({time.perf_counter() - t0:.1f} s)")


def versions(check: Check, torch: Any) -> None:
    check.say(f"python {platform.python_version()} on {platform.platform()}")
    check.say(f"vramscope {__version__}, torch {torch.__version__}")
    check.say(f"torch.version.hip = {getattr(torch.version, 'hip', None)}")
    check.say(f"torch.version.cuda = {getattr(torch.version, 'cuda', None)}")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    check.say(f"GPUs torch sees: {gpus}")
    for name in ("ROCR_VISIBLE_DEVICES", *VISIBLE_DEVICE_VARIABLES, "HSA_OVERRIDE_GFX_VERSION"):
        check.say(f"{name} = {os.environ.get(name, '(unset)')}")
    for name in ("PYTORCH_HIP_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        check.say(f"{name} = {os.environ.get(name, '(unset)')}")


def device_section(check: Check, torch: Any, device: Any, info: Any) -> None:
    check.say(
        f"{info.kind} {info.name}, arch {info.arch}, runtime {info.runtime_version}, "
        f"index {info.index}, bus id {info.bus_id}"
    )
    if device.type != "cuda":
        check.say("CPU: no device memory; peaks below are resident-memory rises (VmHWM)")
        return
    props = torch.cuda.get_device_properties(device)
    check.say(
        f"total_memory {props.total_memory:,} B, multiprocessors "
        f"{getattr(props, 'multi_processor_count', '?')}"
    )
    free, total = torch.cuda.mem_get_info(device)
    check.say(f"mem_get_info: free {free:,} B of {total:,} B (device-wide)")
    card = pick_card(info.bus_id, info.index, dict(os.environ))
    if card is None:
        check.say("sysfs: no amdgpu card for this device")
    else:
        path, how = card
        check.say(f"sysfs card {path} ({how})")
        for name in ("mem_info_vram_used", "mem_info_vram_total", "mem_info_gtt_used"):
            check.say(f"  {name} = {read_int_file(path / name)}")
    drm = read_process_drm_memory(bus_id=info.bus_id)
    if drm is None:
        check.say("fdinfo: this process holds no amdgpu DRM client")
    else:
        check.say(
            f"fdinfo (this process, {drm.clients} DRM client(s)): vram {drm.vram_bytes:,} B, "
            f"gtt {drm.gtt_bytes:,} B"
        )


def probe(check: Check, torch: Any, device: Any, info: Any, nbytes: int) -> None:
    from hip_backend.torch_engine import monitor_for

    monitor = monitor_for(device, info.kind, info.total_bytes, info.bus_id, info.index)
    monitor.start()
    block = torch.empty(nbytes, dtype=torch.uint8, device=device)
    block.fill_(1)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        check.say(
            f"allocated {mib(torch.cuda.memory_allocated(device))}, "
            f"reserved {mib(torch.cuda.memory_reserved(device))}"
        )
    figures = monitor.stop()
    check.say(
        f"probe {mib(nbytes)}: peak {mib(figures.peak_bytes)} ({figures.peak_kind}); "
        f"reserved peak {mib(figures.reserved_peak_bytes)}; device-used rise "
        f"{mib(figures.device_used_delta_bytes)} ({figures.device_used_source or '-'})"
    )
    for key, value in figures.extra.items():
        check.say(f"  {key} = {value}")
    del block


def sdpa_peaks(check: Check, torch: Any, device: Any, info: Any, shape: dict[str, int]) -> None:
    import torch.nn.functional as F

    from hip_backend.torch_engine import math_sdpa_scratch_bytes, monitor_for, sdpa_backend

    heads, kv, dim, chunk = shape["heads"], shape["kv_heads"], shape["head_dim"], shape["chunk"]
    check.say(f"q [1, {heads}, {chunk}, {dim}], k/v [1, {kv}, S, {dim}]")
    for dtype in (torch.float16, torch.bfloat16):
        q = torch.randn(1, heads, chunk, dim, device=device).to(dtype)
        k = torch.randn(1, kv, 2 * chunk, dim, device=device).to(dtype)
        mask = torch.ones(chunk, 2 * chunk, dtype=torch.bool, device=device).tril(chunk)
        cases = {
            f"first chunk (S={chunk}, causal)": (k[:, :, :chunk], None, True),
            f"later chunk (S={2 * chunk}, bool mask)": (k, mask, False),
        }
        for label, (keys, m, causal) in cases.items():
            backend = sdpa_backend(q, keys, causal=causal, mask=m)
            monitor = monitor_for(device, info.kind, info.total_bytes, info.bus_id, info.index)
            monitor.start()
            out = F.scaled_dot_product_attention(
                q, keys, keys, attn_mask=m, is_causal=causal, enable_gqa=heads != kv
            )
            figures = monitor.stop()
            scratch = math_sdpa_scratch_bytes(heads, chunk, keys.shape[2], q.element_size())
            check.say(
                f"{str(dtype).removeprefix('torch.'):8s} {label:32s} kernel {backend:9s} peak "
                f"{mib(figures.peak_bytes)} (output {mib(out.numel() * out.element_size())}, "
                f"math path's score matrix would be {mib(scratch)})"
            )
            del out


def run_ahead(check: Check, torch: Any, device: Any, size: int, ops: int) -> None:
    from hip_backend.torch_engine import event_factory

    record = event_factory(device)
    a = torch.randn(size, size, device=device, dtype=torch.float16)
    events = []
    issued_before_done = None
    t0 = time.perf_counter()
    for i in range(ops):
        a = a @ a / size
        events.append(record())
        if events[0].query():
            issued_before_done = i + 1
            break
    host_s = time.perf_counter() - t0
    events[-1].synchronize()
    total_s = time.perf_counter() - t0
    if device.type != "cuda":
        check.say(
            f"CPU: kernels run synchronously; the engine's stand-in event never completes "
            f"on its own ({len(events)} ops issued, none complete), i.e. the device is "
            "modelled as a whole pass behind"
        )
    elif issued_before_done is None:
        check.say(f"the first event was still pending after {ops} issued {size}^2 matmuls")
    else:
        check.say(
            f"the first event completed after the host had issued {issued_before_done} "
            f"{size}^2 F16 matmuls ({host_s * 1e3:.1f} ms of issuing, {total_s * 1e3:.1f} ms "
            "to drain)"
        )


def model_runs(check: Check, plan: dict[str, Any], device_choice: str, tmp: Path) -> None:
    t0 = time.perf_counter()
    folder = write_random_model(tmp / "llama-1b-4bit", plan["model"])
    check.say(f"model written in {time.perf_counter() - t0:.1f} s: {plan['model']}")
    check.say(
        "| context | budget | peak | reserved | device-used rise | max held | commits | "
        "waits | prefill tok/s | decode tok/s | estimate (ROCm) | covered |"
    )
    check.say("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for context in plan["contexts"]:
        for budget in plan["budgets"]:
            left = check.left()
            if left < 10:
                check.say(f"| {context} | {budget} | skipped: time budget spent |")
                continue
            request = MeasureRequest(
                str(folder),
                prompt_tokens=context - plan["gen"],
                gen_tokens=plan["gen"],
                warmup_tokens=plan["warmup"],
                inflight=budget,
                device=device_choice,
                emulate="rocm",
                timeout_s=left,
            )
            prepared = prepare(request)
            outcome = peak_or_failure(measure(prepared, record_history=False))
            if not isinstance(outcome, MeasuredPeak):
                check.say(
                    f"| {context} | {budget} | FAILED {outcome.kind.value}: {outcome.message} |"
                )
                continue
            fields = outcome.fields
            assert isinstance(fields, TorchFields)
            margin = outcome.margin
            check.say(
                f"| {context} | {budget} | {mib(outcome.peak_bytes)} | "
                f"{mib(outcome.reserved_peak_bytes)} | {mib(outcome.device_used_delta_bytes)} | "
                f"{mib(fields.inflight_max_held_bytes)} | {fields.inflight_commits} | "
                f"{fields.inflight_waits} | {outcome.prefill_tokens_per_s:,.0f} | "
                f"{outcome.decode_tokens_per_s:,.1f} | {mib(outcome.estimate_bytes)} | "
                f"{'yes' if margin is not None and margin.covered else 'no'} |"
            )
            last = outcome
    if "last" in locals():
        last_fields = last.fields
        sdpa = last_fields.sdpa_backend if isinstance(last_fields, TorchFields) else None
        where = ", where MLX has none" if last.device_kind is Backend.CUDA else ""
        check.say(
            f"device-used source: {last.device_used_source}; SDPA kernels: "
            f"{sdpa}; MLX-ROCm's in-flight queue emulated ({last.device_kind.value}{where})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("auto", "rocm", "cuda"), default="auto")
    parser.add_argument("--dry-run", action="store_true", help="tiny shapes on the CPU")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    import torch

    from hip_backend import MeasureError
    from hip_backend.torch_engine import select_device, warm_up_kernels

    torch.set_grad_enabled(False)
    plan = DRY if args.dry_run else FULL
    check = Check()
    check.say(
        "# vramscope GPU check"
        + (" (dry run on the CPU: tiny shapes, no GPU)" if args.dry_run else "")
    )
    check.section("Versions and settings", lambda: versions(check, torch))
    try:
        device, info = select_device("cpu" if args.dry_run else args.device)
    except MeasureError as exc:
        check.say(f"no device: {exc}")
        return 1
    warm_up_kernels(device)
    check.section("Device", lambda: device_section(check, torch, device, info))
    check.section(
        f"Probe of {mib(plan['probe'])}", lambda: probe(check, torch, device, info, plan["probe"])
    )
    check.section("SDPA peaks", lambda: sdpa_peaks(check, torch, device, info, plan["sdpa"]))
    check.section(
        "Host run-ahead",
        lambda: run_ahead(check, torch, device, **plan["run_ahead"]),
    )
    with tempfile.TemporaryDirectory(prefix="vramscope-gpu-check-") as tmp:
        check.section(
            "~1B 4-bit llama, budgets " + ", ".join(map(str, plan["budgets"])) + " MiB"
            if not args.dry_run
            else "tiny 4-bit llama (dry run)",
            lambda: model_runs(check, plan, "cpu" if args.dry_run else args.device, Path(tmp)),
        )
    elapsed = time.perf_counter() - check.started
    check.say(f"\nwhole check: {elapsed:.0f} s (budget {TIME_BUDGET_S:.0f} s)")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(check.lines) + "\n", encoding="utf-8")
    failed = any(line.startswith(("FAILED", "| ")) and "FAILED" in line for line in check.lines)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
