"""vramscope's mlx-lm load held against real MLX peaks, family by family (#38).

    .venv/bin/python scripts/bench_load_peaks.py [--only FAMILY,...] [--out FILE.md]

For every case: mlx-lm writes a small model of the family from a sparse config (its own
class, random weights of the real shapes, `mx.save_safetensors`; the test helper
`tests.core.load.mlx_lm_kv_reference` with no cases), `vramscope measure DIR --engine
mlx --prompt-tokens P --gen-tokens G --json --no-history` measures it in the real
engine's child (`mx.get_peak_memory` over the load, the warm-up and the measured pass),
and vramscope's load is read from the same folder as a user's (config and safetensors
headers, `plan_mlx_lm`) after P prompt and G generated tokens. Overshoot is load total /
peak - 1: a negative one is a peak the load does not cover.

The engine's workload prefills in chunks of 512 (mlxcel's bench); the load's schedule
is mlx-lm's default 2,048, so every prompt here is at most 513 tokens, where the two
schedules are the same. Exits 1 when a peak is not covered or the median overshoot is
over 15%.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.catalog.model_dir import read_model_dir  # noqa: E402
from core.load.mlx_lm import MlxLmPlan, plan_mlx_lm  # noqa: E402
from core.model.tensor_list import folder_tensors  # noqa: E402

MEDIAN_LIMIT = 0.15
DENSE = {"rms_norm_eps": 1e-5}
QWEN_MOE = {"decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": True}


@dataclass(frozen=True)
class Case:
    family: str
    label: str
    """The model's shape, in words, for the table."""
    config: dict[str, Any]
    prompt: int
    gen: int
    dtype: str = "bfloat16"


def _llama_like(
    kind: str, hidden: int, layers: int, heads: int, kv: int, mlp: int, vocab: int, **extra: Any
) -> dict[str, Any]:
    return {
        "model_type": kind,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": mlp,
        "vocab_size": vocab,
        **DENSE,
        **extra,
    }


def cases() -> list[Case]:
    """Two shapes a family, none of them the transient's fitting shapes (llama, 8 heads,
    2 KV heads, hidden 512-1,024, vocab 32,000, P 512-6,144)."""
    q3 = {"max_position_embeddings": 4096, "rope_theta": 10000.0}
    return [
        Case(
            "llama",
            "h384 L3 6/2 heads mlp1024 v16000",
            _llama_like("llama", 384, 3, 6, 2, 1024, 16000),
            384,
            16,
        ),
        Case(
            "llama",
            "h768 L2 12/4 heads mlp2048 v8000",
            _llama_like("llama", 768, 2, 12, 4, 2048, 8000),
            500,
            8,
        ),
        Case(
            "qwen2",
            "h448 L3 7/1 heads mlp1200 v20000",
            _llama_like("qwen2", 448, 3, 7, 1, 1200, 20000),
            320,
            24,
        ),
        Case(
            "qwen2",
            "h640 L2 10/2 heads mlp2560 v12000",
            _llama_like("qwen2", 640, 2, 10, 2, 2560, 12000),
            512,
            1,
        ),
        Case(
            "qwen3",
            "h256 L3 8/4x64 mlp768 v16000 tied",
            _llama_like(
                "qwen3", 256, 3, 8, 4, 768, 16000, head_dim=64, tie_word_embeddings=True, **q3
            ),
            448,
            16,
        ),
        Case(
            "qwen3",
            "h512 L2 16/8x128 mlp1536 v24000",
            _llama_like(
                "qwen3", 512, 2, 16, 8, 1536, 24000, head_dim=128, tie_word_embeddings=False, **q3
            ),
            300,
            40,
        ),
        Case(
            "gemma2",
            "h384 L4 8/4x96 mlp1152 v16000 win128",
            _llama_like("gemma2", 384, 4, 8, 4, 1152, 16000, head_dim=96, sliding_window=128),
            400,
            8,
        ),
        Case(
            "gemma2",
            "h256 L2 4/2x256 mlp1024 v32000 win256",
            _llama_like("gemma2", 256, 2, 4, 2, 1024, 32000, head_dim=256, sliding_window=256),
            512,
            16,
        ),
        Case(
            "gemma3",
            "h320 L7 4/1x256 mlp1280 v16000 win128 (text defaults)",
            {
                "model_type": "gemma3_text",
                "hidden_size": 320,
                "num_hidden_layers": 7,
                "intermediate_size": 1280,
                "vocab_size": 16000,
                "sliding_window": 128,
            },
            480,
            8,
        ),
        Case(
            "gemma3",
            "h512 L6 8/4x64 mlp1536 v24000 win200",
            {
                "model_type": "gemma3_text",
                "hidden_size": 512,
                "num_hidden_layers": 6,
                "num_attention_heads": 8,
                "num_key_value_heads": 4,
                "head_dim": 64,
                "intermediate_size": 1536,
                "vocab_size": 24000,
                "sliding_window": 200,
            },
            360,
            24,
        ),
        Case(
            "phi3",
            "h384 L3 6 heads mlp1024 v16000",
            _llama_like("phi3", 384, 3, 6, 6, 1024, 16000),
            256,
            32,
        ),
        Case(
            "phi3",
            "h640 L2 10/2 heads mlp2048 v12000",
            _llama_like("phi3", 640, 2, 10, 2, 2048, 12000),
            500,
            4,
        ),
        Case(
            "mistral",
            "h512 L3 8/2 heads mlp1400 v16000 win4096",
            _llama_like("mistral", 512, 3, 8, 2, 1400, 16000, sliding_window=4096),
            384,
            16,
        ),
        Case(
            "mistral",
            "h384 L2 12/4x32 mlp1024 v32000",
            _llama_like("mistral", 384, 2, 12, 4, 1024, 32000, head_dim=32),
            512,
            8,
        ),
        Case(
            "qwen3_moe",
            "h256 L2 8/2x64 E16 top4 moe256 v8000 fp32",
            _llama_like(
                "qwen3_moe",
                256,
                2,
                8,
                2,
                512,
                8000,
                head_dim=64,
                num_experts=16,
                num_experts_per_tok=4,
                moe_intermediate_size=256,
                tie_word_embeddings=False,
                **q3,
                **QWEN_MOE,
            ),
            384,
            8,
            "float32",
        ),
        Case(
            "qwen3_moe",
            "h384 L2 6/2x64 E8 top2 moe512 v8000 fp32",
            _llama_like(
                "qwen3_moe",
                384,
                2,
                6,
                2,
                768,
                8000,
                head_dim=64,
                num_experts=8,
                num_experts_per_tok=2,
                moe_intermediate_size=512,
                tie_word_embeddings=False,
                **q3,
                **QWEN_MOE,
            ),
            500,
            12,
            "float32",
        ),
        Case(
            "deepseek_v2",
            "h256 L2 4 heads MLA r128 E8 top2 v8000 fp32",
            {
                "model_type": "deepseek_v2",
                "hidden_size": 256,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 4,
                "q_lora_rank": None,
                "kv_lora_rank": 128,
                "qk_rope_head_dim": 32,
                "qk_nope_head_dim": 64,
                "v_head_dim": 64,
                "n_routed_experts": 8,
                "num_experts_per_tok": 2,
                "n_shared_experts": 1,
                "moe_intermediate_size": 256,
                "intermediate_size": 768,
                "first_k_dense_replace": 1,
                "vocab_size": 8000,
                **DENSE,
                "rope_scaling": {
                    "type": "yarn",
                    "factor": 1.0,
                    "original_max_position_embeddings": 4096,
                },
            },
            384,
            8,
            "float32",
        ),
        Case(
            "deepseek_v2",
            "h384 L3 6 heads MLA r64 E4 top2 v6000 fp32",
            {
                "model_type": "deepseek_v2",
                "hidden_size": 384,
                "num_hidden_layers": 3,
                "num_attention_heads": 6,
                "num_key_value_heads": 6,
                "q_lora_rank": None,
                "kv_lora_rank": 64,
                "qk_rope_head_dim": 16,
                "qk_nope_head_dim": 48,
                "v_head_dim": 64,
                "n_routed_experts": 4,
                "num_experts_per_tok": 2,
                "n_shared_experts": 1,
                "moe_intermediate_size": 384,
                "intermediate_size": 1024,
                "first_k_dense_replace": 1,
                "vocab_size": 6000,
                **DENSE,
                "rope_scaling": {
                    "type": "yarn",
                    "factor": 1.0,
                    "original_max_position_embeddings": 4096,
                },
            },
            256,
            16,
            "float32",
        ),
        Case(
            "gpt_oss",
            "h256 L4 8/2x64 E8 top2 v8000 win128 fp32",
            {
                "model_type": "gpt_oss",
                "hidden_size": 256,
                "num_hidden_layers": 4,
                "intermediate_size": 256,
                "num_local_experts": 8,
                "num_experts_per_tok": 2,
                "num_attention_heads": 8,
                "num_key_value_heads": 2,
                "head_dim": 64,
                "sliding_window": 128,
                "vocab_size": 8000,
            },
            320,
            8,
            "float32",
        ),
        Case(
            "gpt_oss",
            "h384 L2 6/2x64 E4 top2 v6000 win256 fp32",
            {
                "model_type": "gpt_oss",
                "hidden_size": 384,
                "num_hidden_layers": 2,
                "intermediate_size": 384,
                "num_local_experts": 4,
                "num_experts_per_tok": 2,
                "num_attention_heads": 6,
                "num_key_value_heads": 2,
                "head_dim": 64,
                "sliding_window": 256,
                "vocab_size": 6000,
            },
            500,
            12,
            "float32",
        ),
        Case(
            "qwen3_next",
            "h256 L4 4/2x64 lin 4/2 E8 top2 v8000 fp32",
            _llama_like(
                "qwen3_next",
                256,
                4,
                4,
                2,
                512,
                8000,
                head_dim=64,
                linear_num_value_heads=4,
                linear_num_key_heads=2,
                linear_key_head_dim=64,
                linear_value_head_dim=64,
                linear_conv_kernel_dim=4,
                num_experts=8,
                num_experts_per_tok=2,
                moe_intermediate_size=256,
                shared_expert_intermediate_size=256,
                partial_rotary_factor=0.25,
                **q3,
                decoder_sparse_step=1,
                mlp_only_layers=[],
                norm_topk_prob=True,
            ),
            384,
            8,
            "float32",
        ),
        Case(
            "qwen3_next",
            "h384 L4 6/2x64 lin 6/2 E4 top2 v6000 fp32",
            _llama_like(
                "qwen3_next",
                384,
                4,
                6,
                2,
                768,
                6000,
                head_dim=64,
                linear_num_value_heads=6,
                linear_num_key_heads=2,
                linear_key_head_dim=64,
                linear_value_head_dim=64,
                linear_conv_kernel_dim=4,
                num_experts=4,
                num_experts_per_tok=2,
                moe_intermediate_size=384,
                shared_expert_intermediate_size=384,
                partial_rotary_factor=0.25,
                **q3,
                decoder_sparse_step=1,
                mlp_only_layers=[],
                norm_topk_prob=True,
            ),
            512,
            4,
            "float32",
        ),
    ]


def held_out_cases() -> list[Case]:
    """Shapes measured only after the rules were set from `cases()`' misses: none of
    them was looked at while the rules were made."""
    q3 = {"max_position_embeddings": 4096, "rope_theta": 10000.0}
    return [
        Case("llama", "h256 L2 4/4x128 mlp1024 v12000", _llama_like(
            "llama", 256, 2, 4, 4, 1024, 12000, head_dim=128), 450, 10),
        Case("qwen3", "h384 L3 6/2x128 mlp1024 v12000", _llama_like(
            "qwen3", 384, 3, 6, 2, 1024, 12000, head_dim=128, tie_word_embeddings=False,
            **q3), 500, 6),
        Case("gemma3", "h256 L6 4/2x128 mlp1024 v16000 win64", {
            "model_type": "gemma3_text", "hidden_size": 256, "num_hidden_layers": 6,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 128,
            "intermediate_size": 1024, "vocab_size": 16000, "sliding_window": 64},
            300, 20),
        Case("phi3", "h512 L2 8/8 heads mlp3072 v10000", _llama_like(
            "phi3", 512, 2, 8, 8, 3072, 10000), 400, 8),
        Case("gemma2", "h512 L2 8/4x64 mlp2048 v12000 win4096", _llama_like(
            "gemma2", 512, 2, 8, 4, 2048, 12000, head_dim=64, sliding_window=4096),
            450, 4),
        Case("gpt_oss", "h192 L4 6/2x64 E8 top4 v6000 win64 fp32", {
            "model_type": "gpt_oss", "hidden_size": 192, "num_hidden_layers": 4,
            "intermediate_size": 192, "num_local_experts": 8, "num_experts_per_tok": 4,
            "num_attention_heads": 6, "num_key_value_heads": 2, "head_dim": 64,
            "sliding_window": 64, "vocab_size": 6000}, 400, 8, "float32"),
        Case("qwen3_moe", "h256 L2 4/2x64 E16 top8 moe128 v6000 fp32", _llama_like(
            "qwen3_moe", 256, 2, 4, 2, 512, 6000, head_dim=64, num_experts=16,
            num_experts_per_tok=8, moe_intermediate_size=128, tie_word_embeddings=False,
            **q3, **QWEN_MOE), 300, 8, "float32"),
        Case("qwen3_next", "h256 L4 8/2x32 lin 8/4x32 E4 top2 v6000 fp32", _llama_like(
            "qwen3_next", 256, 4, 8, 2, 512, 6000, head_dim=32, linear_num_value_heads=8,
            linear_num_key_heads=4, linear_key_head_dim=32, linear_value_head_dim=32,
            linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2,
            moe_intermediate_size=256, shared_expert_intermediate_size=256,
            partial_rotary_factor=0.25, **q3, decoder_sparse_step=1, mlp_only_layers=[],
            norm_topk_prob=True), 256, 8, "float32"),
    ]  # fmt: skip


@dataclass(frozen=True)
class Row:
    case: Case
    peak: int
    weights: int
    kv: int
    transient: int
    total: int

    @property
    def overshoot(self) -> float:
        return self.total / self.peak - 1


def write_model(case: Case, folder: Path) -> None:
    spec = {"config": case.config, "dtype": case.dtype, "cases": []}
    child = [sys.executable, "-m", "tests.core.load.mlx_lm_kv_reference"]
    done = subprocess.run(
        [*child, json.dumps(spec), str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{case.family}: mlx-lm could not write the model: {done.stderr[-800:]}")


def measure(case: Case, folder: Path) -> int:
    """The mlx engine's peak for the case, through the CLI a user runs."""
    command = [
        sys.executable,
        "-m",
        "tui",
        "measure",
        str(folder),
        "--engine",
        "mlx",
        "--prompt-tokens",
        str(case.prompt),
        "--gen-tokens",
        str(case.gen),
        "--json",
        "--no-history",
    ]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode:
        raise SystemExit(f"{case.family}: measure failed: {done.stderr[-800:]}")
    return int(json.loads(done.stdout)["measured"]["peak_bytes"])


def load_of(case: Case, folder: Path) -> tuple[int, int, int, int]:
    """(weights, KV, transient, total) of vramscope's load after P + G tokens."""
    plan = plan_mlx_lm(read_model_dir(folder, case.family), folder_tensors(folder))
    if not isinstance(plan, MlxLmPlan):
        raise SystemExit(f"{case.family}: no load: {plan.reason}")
    load = plan.at(case.prompt + case.gen, case.prompt)
    return load.weights_bytes, load.kv_bytes, load.transient_bytes, load.total_bytes


def run(selected: list[Case], scratch: Path) -> list[Row]:
    rows = []
    for n, case in enumerate(selected):
        folder = scratch / f"{n:02d}-{case.family}"
        write_model(case, folder)
        peak = measure(case, folder)
        row = Row(case, peak, *load_of(case, folder))
        rows.append(row)
        print(
            f"{case.family:12} P{case.prompt:<4} G{case.gen:<3} peak {peak:>12,}  "
            f"load {row.total:>12,}  {row.overshoot:+.1%}",
            file=sys.stderr,
            flush=True,
        )
    return rows


def table(rows: list[Row]) -> str:
    lines = [
        "| family | model (dtype) | P | G | MLX peak | load: weights | KV | transient | "
        "total | overshoot |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        c = r.case
        dtype = {"bfloat16": "bf16", "float32": "fp32"}.get(c.dtype, c.dtype)
        lines.append(
            f"| {c.family} | {c.label} ({dtype}) | {c.prompt} | {c.gen} | {r.peak:,} | "
            f"{r.weights:,} | {r.kv:,} | {r.transient:,} | {r.total:,} | "
            f"{r.overshoot:+.1%} |"
        )
    return "\n".join(lines)


def verdict(rows: list[Row]) -> tuple[bool, str]:
    missed = [r for r in rows if r.total < r.peak]
    median = statistics.median(r.overshoot for r in rows)
    worst = max(rows, key=lambda r: r.overshoot)
    text = (
        f"{len(rows)} peaks of {len({r.case.family for r in rows})} families: "
        f"{len(rows) - len(missed)} covered, median overshoot {median:+.1%} "
        f"(limit {MEDIAN_LIMIT:.0%}), largest {worst.overshoot:+.1%} ({worst.case.family}, "
        f"P{worst.case.prompt})"
    )
    if missed:
        text += "; not covered: " + ", ".join(
            f"{r.case.family} P{r.case.prompt} ({r.overshoot:+.1%})" for r in missed
        )
    return not missed and median <= MEDIAN_LIMIT, text


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated families")
    parser.add_argument(
        "--held-out", action="store_true", help="the shapes measured after the rules were set"
    )
    parser.add_argument("--out", type=Path, help="write the table here as well")
    args = parser.parse_args(argv)
    wanted = {f for f in args.only.split(",") if f}
    chosen = held_out_cases() if args.held_out else cases()
    selected = [c for c in chosen if not wanted or c.family in wanted]
    with tempfile.TemporaryDirectory(prefix="vramscope-load-peaks-") as scratch:
        rows = run(selected, Path(scratch))
    ok, text = verdict(rows)
    out = table(rows) + "\n\n" + text + "\n"
    print(out)
    if args.out:
        args.out.write_text(out, encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
