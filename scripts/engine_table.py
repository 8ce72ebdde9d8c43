"""The estimate, MLX's own peak and the torch engine's peak for the same small models.

Writes small models with mlx-lm (as `mlx_lm.convert` would: random weights, cast,
quantized), then runs `vramscope table --engine mlx,torch` on them on the CPU and
writes the Markdown to docs/benchmark_results/engines-cpu-<date>.md (or --out).
Needs the test extra (mlx, mlx-lm) and torch.

    python scripts/engine_table.py [--context 160] [--gen-tokens 32] [--budget 64]

The workload is small because MLX's CPU kernels for quantized weights are slow
(a 512-token 4-bit prefill of a 1024x8 llama takes minutes here).
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hip_backend.mlx_models import (  # noqa: E402
    GEMMA2_CONFIG,
    LLAMA_CONFIG,
    QWEN3_MOE_CONFIG,
    write_mlx_model,
)

SMALL_LLAMA = {
    **LLAMA_CONFIG,
    "hidden_size": 512,
    "num_hidden_layers": 4,
    "intermediate_size": 1536,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 4096,
}
MODELS = {
    "llama-512x4-bf16": ({**SMALL_LLAMA, "torch_dtype": "bfloat16"}, None),
    "llama-512x4-4bit": (SMALL_LLAMA, 4),
    "qwen3_moe-256x4-4bit": (
        {
            **QWEN3_MOE_CONFIG,
            "hidden_size": 256,
            "num_hidden_layers": 4,
            "num_experts": 16,
            "num_experts_per_tok": 4,
            "moe_intermediate_size": 256,
            "vocab_size": 4096,
        },
        4,
    ),
    "gemma2-256x4-f16": (
        {**GEMMA2_CONFIG, "hidden_size": 256, "num_hidden_layers": 4, "vocab_size": 4096},
        None,
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context", type=int, default=160)
    parser.add_argument("--gen-tokens", type=int, default=32)
    parser.add_argument("--budget", type=int, default=64)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    date = datetime.date.today().isoformat()
    out = args.out or ROOT / "docs" / "benchmark_results" / f"engines-cpu-{date}.md"
    with tempfile.TemporaryDirectory(prefix="vramscope-engines-") as tmp:
        folders = []
        for name, (config, bits) in MODELS.items():
            folder = Path(tmp) / name
            write_mlx_model(folder, config, bits=bits)
            folders.append(str(folder))
        command = [
            sys.executable,
            "-m",
            "tui",
            "table",
            *folders,
            "--engine",
            "mlx,torch",
            "--contexts",
            str(args.context),
            "--budgets",
            str(args.budget),
            "--gen-tokens",
            str(args.gen_tokens),
            "--device",
            "cpu",
            "--no-history",
            "--out",
            str(out),
        ]
        done = subprocess.run(command, cwd=ROOT, check=False)
        text = out.read_text(encoding="utf-8").replace(tmp + "/", "")
        out.write_text(text, encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
