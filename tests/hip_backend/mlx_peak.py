"""Real MLX's peak for mlxcel's bench workload, run by mlx-lm in a process of its own.

    python -m tests.hip_backend.mlx_peak MODEL_FOLDER P G [WARMUP]

prints one JSON object: `peak_bytes` (mx.get_peak_memory() over the load, a warm-up
pass and the measured pass, reset just before the load, so it counts the weights as
the engine's peak does), `active_after_load_bytes`, and the pass's timings. The
workload is the engine's (hip_backend/workload.py): an 8-token warm-up prompt and
WARMUP greedy tokens, then P synthetic prompt tokens prefilled in chunks of 512 with
the cache evaluated after each, then G greedy tokens, each pass from a fresh cache.
A process of its own, so that MLX's allocator and peak see nothing else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hip_backend.workload import PREFILL_CHUNK, WARMUP_PROMPT_TOKENS, synthetic_prompt


def _pass(model: Any, prompt: list[int], gen_tokens: int) -> tuple[float, float]:
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache

    cache = make_prompt_cache(model)
    started = time.perf_counter()
    logits = None
    for i in range(0, len(prompt), PREFILL_CHUNK):
        logits = model(mx.array([prompt[i : i + PREFILL_CHUNK]]), cache=cache)[:, -1, :]
        mx.eval([c.state for c in cache], logits)
    assert logits is not None
    token = int(mx.argmax(logits, axis=-1).item())
    prefill = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(gen_tokens):
        logits = model(mx.array([[token]]), cache=cache)[:, -1, :]
        token = int(mx.argmax(logits, axis=-1).item())
    mx.synchronize()
    return prefill, time.perf_counter() - started


def measure(folder: Path, prompt_tokens: int, gen_tokens: int, warmup: int = 20) -> dict[str, Any]:
    """Load the model with mlx-lm and run the workload; MLX's figures in bytes and seconds."""
    import mlx.core as mx
    from mlx_lm.utils import load_model

    mx.synchronize()
    mx.clear_cache()
    mx.reset_peak_memory()
    model, config = load_model(folder)
    mx.eval(model.parameters())
    after_load = int(mx.get_active_memory())
    vocab = int(config["vocab_size"])
    warm = synthetic_prompt(vocab, min(WARMUP_PROMPT_TOKENS, prompt_tokens), 1)
    _pass(model, warm, warmup)
    prefill, decode = _pass(model, synthetic_prompt(vocab, prompt_tokens, 0), gen_tokens)
    return {
        "peak_bytes": int(mx.get_peak_memory()),
        "active_after_load_bytes": after_load,
        "prefill_seconds": round(prefill, 3),
        "decode_seconds": round(decode, 3),
    }


def measure_in_subprocess(
    folder: Path, prompt_tokens: int, gen_tokens: int, warmup: int = 20, timeout: float = 1800
) -> dict[str, Any]:
    """`measure` in a fresh interpreter (this one may hold torch and other models)."""
    root = Path(__file__).resolve().parents[2]
    args = [str(folder), str(prompt_tokens), str(gen_tokens), str(warmup)]
    done = subprocess.run(
        [sys.executable, "-m", "tests.hip_backend.mlx_peak", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


if __name__ == "__main__":
    folder, p, g = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    w = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    print(json.dumps(measure(folder, p, g, w)))
