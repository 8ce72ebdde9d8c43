"""Two-rank MLX measurement figures on the CPU (prints, asserts nothing).

Wall time of `vramscope measure --engine mlx --tp 2` and `--pp 2` on a small
qwen2 model (fp16, written here with mlx-lm) through `mlx.launch --backend ring`
on the loopback: launcher start, two Python + MLX imports, the ring handshake,
the sharded load, the workload and the result files, against one process doing
the same load and workload. Each rank's peak is printed beside its estimate.

    python scripts/bench_parallel.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.measurement.fields import RankFields  # noqa: E402
from core.measurement.request import MeasureRequest  # noqa: E402
from core.measurement.run import MeasuredRun  # noqa: E402
from core.parallel.plan import ParallelPlan  # noqa: E402
from core.parallel.sharding import ParallelKind  # noqa: E402
from hip_backend import measure, prepare_parallel, run_single  # noqa: E402

CONFIG = {
    "model_type": "qwen2",
    "hidden_size": 256,
    "num_hidden_layers": 8,
    "intermediate_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-6,
    "vocab_size": 1024,
    "rope_theta": 10000.0,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}


def write_model(dest: Path) -> Path:
    import mlx.core as mx
    from mlx.utils import tree_map
    from mlx_lm.utils import _get_classes, save_config, save_model

    mx.random.seed(0)
    model_class, args_class = _get_classes(config=CONFIG)
    model = model_class(args_class.from_dict(CONFIG))
    model.update(tree_map(lambda p: p.astype(mx.float16), model.parameters()))
    mx.eval(model.parameters())
    save_model(dest, model)
    save_config(dict(CONFIG), config_path=dest / "config.json")
    return dest


def main() -> int:
    try:
        import mlx_lm  # noqa: F401
    except ImportError:
        print("mlx-lm is not installed; skipped")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_model(Path(tmp) / "qwen2-fp16")
        request = MeasureRequest(
            model=str(folder), prompt_tokens=32, gen_tokens=4, warmup_tokens=0, device="cpu",
            timeout_s=600,
        )  # fmt: skip
        print("two-rank MLX measurement on the CPU (mlx.launch --backend ring, loopback)")
        print("  model: qwen2, 8 layers, 16.8 MB fp16; workload pp32 / tg4")
        prepared = prepare_parallel(request, ParallelPlan(ParallelKind.TENSOR, 2))
        t0 = time.perf_counter()
        single = run_single(prepared)
        t_single = time.perf_counter() - t0
        if isinstance(single, MeasuredRun):
            print(f"  one process:   {t_single:6.2f} s wall, peak {single.peak.peak_bytes:,} bytes")
        for kind in (ParallelKind.TENSOR, ParallelKind.PIPELINE):
            prepared = prepare_parallel(request, ParallelPlan(kind, 2))
            t0 = time.perf_counter()
            outcome = measure(prepared, record_history=False)
            wall = time.perf_counter() - t0
            if not isinstance(outcome, MeasuredRun):
                print(f"  {kind.value} 2: failed ({outcome.kind.label}): {outcome.message}")
                continue
            print(
                f"  {kind.value} 2 ranks:   {wall:6.2f} s wall "
                f"({wall / t_single:4.2f}x one process)"
            )
            for peak in outcome.ranks:
                m = peak.margin
                covered = "covered" if m and m.covered else "NOT covered"
                rank = peak.fields
                assert isinstance(rank, RankFields)
                print(
                    f"    rank {rank.rank}: peak {peak.peak_bytes:,} bytes, estimate "
                    f"{peak.estimate_bytes or 0:,} ({covered}); seconds {rank.seconds}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
