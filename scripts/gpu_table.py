"""The "Estimate against peak" table on a GPU machine, in under 5 minutes.

Measures a small model (about 1 B parameters in MLX 4-bit, real random weights
written to a temp folder) and a mid-size one (the built-in
mlx-community/Meta-Llama-3.1-8B-Instruct-4bit profile, synthetic weights) at
contexts 640 and 4096 with in-flight budgets 256, 1024 and 4096 MiB, then writes
docs/benchmark_results/<device>-<date>.md.

Decode length barely moves the peak (the prefill's weight copies set it; mlxcel
saw 20.60 GB after a 20-token and a 128-token pass alike), so the measured pass
decodes 32 tokens and the warm-up 4, which keeps the whole table within budget.

    python scripts/gpu_table.py                 # ROCm or CUDA, whichever torch sees
    python scripts/gpu_table.py --dry-run       # the same pipeline on the CPU, tiny models
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.backend import Backend  # noqa: E402
from core.measurement.report import TableRow, markdown_table  # noqa: E402
from core.measurement.request import MeasureRequest  # noqa: E402
from core.measurement.result import MeasuredPeak, MeasurementFailure  # noqa: E402
from core.measurement.run import peak_or_failure  # noqa: E402
from hip_backend import measure, prepare, write_random_model  # noqa: E402

TIME_BUDGET_S = 300.0
SMALL_MODEL = {
    "model_type": "llama",
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "intermediate_size": 8192,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-5,
    "vocab_size": 128256,
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "quantization": {"group_size": 64, "bits": 4},
}
MID_MODEL = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"

FULL = {"contexts": (640, 4096), "budgets": (256, 1024, 4096), "gen": 32, "warmup": 4}
DRY = {"contexts": (48, 96), "budgets": (16, 64), "gen": 8, "warmup": 1}
DRY_SMALL = {
    **SMALL_MODEL,
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "intermediate_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 2048,
}
DRY_MID = {**DRY_SMALL, "num_hidden_layers": 24, "hidden_size": 512, "intermediate_size": 4096}


def device_slug(peak: MeasuredPeak) -> str:
    label = peak.arch if peak.device_kind is Backend.ROCM and peak.arch else peak.device_name
    return re.sub(r"[^A-Za-z0-9]+", "-", f"{peak.device_kind.value}-{label}").strip("-").lower()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("auto", "rocm", "cuda", "cpu"), default="auto")
    parser.add_argument("--dry-run", action="store_true", help="tiny models on the CPU")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "docs" / "benchmark_results")
    args = parser.parse_args()
    plan = DRY if args.dry_run else FULL
    device = "cpu" if args.dry_run else args.device
    started = time.perf_counter()
    rows: list[TableRow] = []
    with tempfile.TemporaryDirectory(prefix="vramscope-gpu-table-") as tmp:
        small = write_random_model(
            Path(tmp) / "small-1b-4bit", DRY_SMALL if args.dry_run else SMALL_MODEL
        )
        mid = (
            str(write_random_model(Path(tmp) / "mid-4bit", DRY_MID)) if args.dry_run else MID_MODEL
        )
        names = {str(small): "random 1B-class llama, MLX 4-bit (real random weights)", mid: mid}
        if args.dry_run:
            names = {str(small): "tiny llama, MLX 4-bit", mid: "24-layer llama, MLX 4-bit"}
        for model in (str(small), mid):
            for context in plan["contexts"]:
                for budget in plan["budgets"]:
                    left = TIME_BUDGET_S - (time.perf_counter() - started)
                    request = MeasureRequest(
                        model,
                        prompt_tokens=context - plan["gen"],
                        gen_tokens=plan["gen"],
                        warmup_tokens=plan["warmup"],
                        inflight=budget,
                        device=device,
                        emulate="rocm",
                        timeout_s=max(left, 1.0),
                    )
                    prepared = prepare(request)
                    t0 = time.perf_counter()
                    outcome = peak_or_failure(measure(prepared, record_history=False))
                    took = time.perf_counter() - t0
                    shown = names[model]
                    if isinstance(outcome, MeasurementFailure):
                        print(f"{shown} @ {context}, {budget} MiB: FAILED {outcome.message}")
                    else:
                        print(
                            f"{shown} @ {context}, {budget} MiB: peak {outcome.peak_bytes:,} "
                            f"estimate {prepared.estimate.total_bytes:,} ({took:.1f} s)"
                        )
                    rows.append(
                        TableRow(shown, context, budget, prepared.estimate.total_bytes, outcome)
                    )
    elapsed = time.perf_counter() - started
    first = next((r.outcome for r in rows if isinstance(r.outcome, MeasuredPeak)), None)
    if first is None:
        print("no run succeeded; nothing written")
        return 1
    date = datetime.date.today().isoformat()
    kind = "CPU dry run of scripts/gpu_table.py (no GPU)" if args.dry_run else "GPU run"
    preamble = [
        f"{kind}, {date}, vramscope {first.vramscope_version}: `python scripts/gpu_table.py"
        + (" --dry-run`." if args.dry_run else "`."),
        f"Device: {first.device_kind.value} {first.device_name}"
        + (f" ({first.arch})" if first.arch else "")
        + f"; torch {first.torch_version}"
        + (f", runtime {first.runtime_version}" if first.runtime_version else "")
        + ".",
        f"Peak: {first.peak_kind}.",
        f"Workload: warm-up (prefill + {plan['warmup']} tokens), then P = context - {plan['gen']} "
        f"prompt tokens and {plan['gen']} greedy decode tokens. MLX-ROCm's in-flight queue "
        "emulated on every device (`--emulate rocm`; MLX-CUDA itself has none). Estimate: "
        "mlxcel's ROCm formula at the context with the row's budget.",
        f"Whole table: {elapsed:.0f} s.",
    ]
    if args.dry_run:
        preamble.append(
            "On the CPU the peak is the process's resident memory, which also holds 5-15 MB "
            "of runtime state (kernel caches, allocator slack) that no estimate term models; "
            "for models this small that alone can exceed the estimate's headroom."
        )
    text = markdown_table(rows, "Estimate against peak", preamble)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    prefix = "dry-run-" if args.dry_run else ""
    out = args.out_dir / f"{prefix}{device_slug(first)}-{date}.md"
    out.write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {out} in {elapsed:.0f} s (budget {TIME_BUDGET_S:.0f} s)")
    return 0 if all(isinstance(r.outcome, MeasuredPeak) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
