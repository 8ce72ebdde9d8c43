"""Measurement figures (prints, asserts nothing; tests never time things).

1. Load throughput: the engine loading a model folder onto the CPU (every tensor
   allocated and read into place) against `safetensors.torch.load_file` on the
   same file, both from a warm page cache, best of several runs. Target: at
   least 0.8x load_file.
2. End-to-end time of a CPU measurement of a tiny model through the launcher
   (child start, torch import, load, warm-up, measured pass, result). Target:
   under 10 s.

    python scripts/bench_measure.py [--runs 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.measurement import MeasuredPeak, MeasureRequest  # noqa: E402
from hip_backend.launcher import measure  # noqa: E402
from hip_backend.random_model import write_random_model  # noqa: E402

LOAD_MODEL = {
    # ~0.75 GB of 4-bit words, scales and biases plus a bf16 embedding.
    "model_type": "llama",
    "hidden_size": 1024,
    "num_hidden_layers": 48,
    "intermediate_size": 8192,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-5,
    "vocab_size": 32000,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization": {"group_size": 64, "bits": 4},
}
TINY_MODEL = {
    **LOAD_MODEL,
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "intermediate_size": 512,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 512,
}


def best_seconds(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return min(samples)


def touch_pages(tensors):
    """Read one byte of every 4 KiB page, so lazily mapped data becomes resident."""
    import torch

    return sum(int(t.reshape(-1).view(torch.uint8)[::4096].sum()) for t in tensors)


def engine_tensors(model):
    """Every weight tensor of a DecoderModel."""
    out = [model.norm]
    linears = [model.embed, model.lm_head]
    for block in model.blocks:
        a = block.attention
        linears += [a.q_proj, a.k_proj, a.v_proj, a.o_proj, *vars(block.mlp).values()]
        out += [block.input_norm, block.post_norm]
    for lin in linears:
        if lin is not None:
            out += [t for t in (lin.weight, lin.scales, lin.biases, lin.bias) if t is not None]
    return out


def bench_load(tmp: Path, runs: int) -> None:
    import torch
    from safetensors.torch import load_file

    from hip_backend.loader import build_model
    from hip_backend.model_source import ModelSource, resolve_source

    folder = write_random_model(tmp / "load", LOAD_MODEL)
    path = folder / "model.safetensors"
    resolved = resolve_source(ModelSource(folder=folder))
    size = resolved.plan.total_bytes
    path.read_bytes()  # warm the page cache for both readers
    cpu = torch.device("cpu")

    def ours():
        return build_model(resolved.arch, resolved.plan, cpu)

    figures = {
        "engine, tensors ready": best_seconds(ours, runs),
        "load_file, tensors ready": best_seconds(lambda: load_file(path), runs),
        "engine, every page resident": best_seconds(
            lambda: touch_pages(engine_tensors(ours())), runs
        ),
        "load_file, every page resident": best_seconds(
            lambda: touch_pages(load_file(path).values()), runs
        ),
    }
    print(
        f"load onto the CPU ({size / 1e9:.2f} GB, {len(resolved.plan.tensors)} tensors, "
        "warm page cache; both map the file lazily)"
    )
    for name, seconds in figures.items():
        print(f"  {name:32s} {size / seconds / 1e9:7.2f} GB/s  ({seconds * 1e3:7.1f} ms)")
    for what in ("tensors ready", "every page resident"):
        ratio = figures[f"load_file, {what}"] / figures[f"engine, {what}"]
        verdict = "OK" if ratio >= 0.8 else "UNDER TARGET"
        print(f"  {what}: {ratio:.2f}x load_file's throughput    target >= 0.8x    {verdict}")


def bench_end_to_end(tmp: Path, runs: int) -> None:
    folder = write_random_model(tmp / "tiny", TINY_MODEL)
    request = MeasureRequest(
        str(folder), prompt_tokens=64, gen_tokens=16, warmup_tokens=4, device="cpu"
    )
    samples = []
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = measure(request, record_history=False)
        samples.append(time.perf_counter() - start)
    assert isinstance(result, MeasuredPeak), result
    best, worst = min(samples), max(samples)
    print("end-to-end CPU measurement of a tiny model (pp64/tg16, warm-up 4 tokens)")
    print(
        f"  best {best:.2f} s, worst {worst:.2f} s over {runs} runs    target < 10 s    "
        f"{'OK' if worst < 10 else 'OVER TARGET'}"
    )
    print(
        f"  of which in the child: load {result.load_seconds:.3f} s, prefill "
        f"{result.prefill_tokens_per_s:.0f} tok/s, decode {result.decode_tokens_per_s:.0f} tok/s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vramscope-bench-measure-") as tmp:
        bench_load(Path(tmp), args.runs)
        bench_end_to_end(Path(tmp), args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
