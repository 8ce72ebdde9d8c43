"""Real MLX on this CPU: measure small llama, qwen2 and gemma-2 models, then calibrate.

Writes small mlx-lm models (random weights, as `mlx_lm.convert` would: cast, some
quantized), measures each with `vramscope table --engine mlx --device cpu` into a
temporary history, and reports vramscope's calibrated estimate against MLX's peaks:
leave-one-model-out, and each family held out (fitted on the other two families'
shapes), with mlxcel's estimate on the same runs. Needs the test extra (mlx, mlx-lm).

    python scripts/calibration_cpu_sweep.py [--contexts 160,288] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.calibration.fit import (  # noqa: E402
    chosen_margin,
    figures,
    fit_fixed_bytes,
    fit_rows,
    row_prediction,
)
from core.calibration.report import figures_words, percent  # noqa: E402
from core.calibration.sources import records_from_history, rows_from_records  # noqa: E402
from core.catalog.model_dir import read_model_dir  # noqa: E402
from core.measurement.history import HISTORY_FILE, HistoryStore  # noqa: E402
from tests.hip_backend.mlx_models import GEMMA2_CONFIG, LLAMA_CONFIG, write_mlx_model  # noqa: E402

QWEN2_CONFIG = {
    "model_type": "qwen2",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-6,
    "vocab_size": 4096,
    "rope_theta": 1000000.0,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}


def llama(h: int, n: int, ff: int, heads: int, kv: int, dtype: str) -> dict[str, object]:
    return {
        **LLAMA_CONFIG,
        "hidden_size": h,
        "num_hidden_layers": n,
        "intermediate_size": ff,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "vocab_size": 4096,
        "torch_dtype": dtype,
    }


def qwen2(h: int, n: int, ff: int, heads: int, kv: int) -> dict[str, object]:
    return {**QWEN2_CONFIG, "hidden_size": h, "num_hidden_layers": n, "intermediate_size": ff,
            "num_attention_heads": heads, "num_key_value_heads": kv}  # fmt: skip


def gemma2(h: int, n: int, ff: int, heads: int, kv: int, hd: int) -> dict[str, object]:
    return {**GEMMA2_CONFIG, "hidden_size": h, "num_hidden_layers": n, "intermediate_size": ff,
            "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": hd,
            "query_pre_attn_scalar": hd, "vocab_size": 4096}  # fmt: skip


# name: (family, config, bits)
MODELS = {
    "llama-256x4-f16": ("llama", llama(256, 4, 768, 4, 2, "float16"), None),
    "llama-512x4-bf16": ("llama", llama(512, 4, 1536, 8, 2, "bfloat16"), None),
    "llama-768x6-bf16": ("llama", llama(768, 6, 2048, 12, 4, "bfloat16"), None),
    "llama-512x4-4bit": ("llama", llama(512, 4, 1536, 8, 2, "bfloat16"), 4),
    "qwen2-384x4-bf16": ("qwen2", qwen2(384, 4, 1024, 6, 2), None),
    "qwen2-640x6-bf16": ("qwen2", qwen2(640, 6, 1792, 10, 2), None),
    "qwen2-512x4-4bit": ("qwen2", qwen2(512, 4, 1536, 8, 2), 4),
    "gemma2-256x4-f16": ("gemma2", gemma2(256, 4, 512, 4, 2, 64), None),
    "gemma2-512x6-f16": ("gemma2", gemma2(512, 6, 1536, 8, 4, 64), None),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", default="160,288")
    parser.add_argument("--gen-tokens", type=int, default=32)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    date = datetime.date.today().isoformat()
    out = args.out or ROOT / "docs" / "benchmark_results" / f"calibration-cpu-{date}.md"
    with tempfile.TemporaryDirectory(prefix="vramscope-calsweep-") as tmp:
        folders = {}
        for name, (_, config, bits) in MODELS.items():
            folders[name] = write_mlx_model(Path(tmp) / name, config, bits=bits)
        env = dict(os.environ, XDG_STATE_HOME=str(Path(tmp) / "state"))
        table = Path(tmp) / "table.md"
        command = [sys.executable, "-m", "tui", "table", *map(str, folders.values()),
                   "--engine", "mlx", "--device", "cpu", "--contexts", args.contexts,
                   "--budgets", "0", "--gen-tokens", str(args.gen_tokens),
                   "--warmup-tokens", "8", "--timeout", "600", "--out", str(table)]  # fmt: skip
        subprocess.run(command, cwd=ROOT, env=env, check=False)
        read = HistoryStore(Path(tmp) / "state" / "vramscope" / HISTORY_FILE).read()
        records, _ = records_from_history(read.results)
        rows, warnings = rows_from_records(
            records, lambda name: read_model_dir(Path(name)), skip_unresolved=True
        )
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
        short = {str(f): n for n, f in folders.items()}
        family = {str(f): MODELS[n][0] for n, f in folders.items()}
        device = read.results[0].device_name if read.results else "cpu"
        text = report(rows, short, family, date, args, device)
    out.write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def report(rows, short, family, date, args, device) -> str:  # type: ignore[no-untyped-def]
    import mlx.core as mx
    import mlx_lm

    lines = [
        "## vramscope's calibrated estimate against real MLX on the CPU",
        "",
        f"Measured {date} by `scripts/calibration_cpu_sweep.py` on {device}, "
        f"mlx {mx.__version__}, mlx-lm {mlx_lm.__version__}; peak = MLX's peak "
        f"(`mx.get_peak_memory`); workload: warm-up (prefill + 8 tokens), then P = context - "
        f"{args.gen_tokens} prompt tokens and {args.gen_tokens} greedy decode tokens; contexts "
        f"{args.contexts}. Random weights of the shapes below (no download). Estimates: "
        "mlxcel's CPU formula (no in-flight term) and vramscope's `W + 2 KV + fixed`, then its "
        "margin (the largest leave-one-model-out miss, at least 1%); held out, the fixed part "
        "and the margin are both chosen without the held-out runs.",
        "",
    ]
    if len({r.model for r in rows}) < 3:
        return "\n".join([*lines, f"Only {len(rows)} runs measured: nothing to calibrate.", ""])
    full = fit_rows(rows)
    cv = full.cross_validated
    assert cv is not None  # three models or more
    fam_over: list[tuple[str, int, int, int]] = []
    fam_fit = {}
    for fam in sorted(set(family.values())):
        rest = [r for r in rows if family[r.model] != fam]
        fam_fit[fam] = (fit_fixed_bytes(rest), chosen_margin(rest))
        for r in rows:
            if family[r.model] == fam:
                fam_over.append(
                    (fam, row_prediction(r, *fam_fit[fam]), r.peak_bytes, r.mlxcel_total_bytes)
                )
    fam_v = figures([e for _, e, _, _ in fam_over], [p for _, _, p, _ in fam_over])
    lomo = {}
    for m in {r.model for r in rows}:
        rest = [r for r in rows if r.model != m]
        lomo[m] = (fit_fixed_bytes(rest), chosen_margin(rest))
    lines += [
        f"{len(rows)} runs of {len(full.models)} models; fitted on all: fixed part "
        f"{full.fixed_bytes:,} bytes, margin {full.margin_basis_points / 100:g}%.",
        "",
        "| Held out | covered and overshoot |",
        "|---|---|",
        f"| vramscope, leave-one-model-out | {figures_words(cv.vramscope)} |",
        f"| vramscope, each family held out (fitted on the other two) | {figures_words(fam_v)} |",
        f"| mlxcel's estimate, same runs | {figures_words(cv.mlxcel)} |",
        f"| vramscope fitted on all (training) | {figures_words(full.training)} |",
        "",
        "| Model | Family | Context | MLX peak (bytes) | mlxcel (bytes) | mlxcel over "
        "| vramscope, model held out | over | vramscope, family held out | over |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (family[r.model], short[r.model], r.context)):
        lo = row_prediction(r, *lomo[r.model])
        fa = row_prediction(r, *fam_fit[family[r.model]])
        p = r.peak_bytes
        lines.append(
            f"| {short[r.model]} | {family[r.model]} | {r.context} | {p:,} "
            f"| {r.mlxcel_total_bytes:,} | {percent(r.mlxcel_total_bytes / p - 1)} "
            f"| {lo:,} | {percent(lo / p - 1)} "
            f"| {fa:,} | {percent(fa / p - 1)} |"
        )
    excess = [r.peak_bytes - r.weights_bytes - 2 * r.kv_bytes for r in rows]
    lines += ["", f"Excess of the peak over W + 2 KV: median {statistics.median(excess):,} bytes, "
              f"largest {max(excess):,}.", ""]  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
