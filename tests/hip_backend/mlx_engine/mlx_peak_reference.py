"""Independent mlx-lm runs of the bench workload, for the mlx engine's tests.

    python -m tests.hip_backend.mlx_engine.mlx_peak_reference P G WARMUP RUN [RUN ...]

RUN is FOLDER or FOLDER@KV_BITS. One JSON line a run, in order: the run (`"run"`),
MLX's peak (mx.get_peak_memory, reset before the load) over
`mlx_lm.utils.load_model` and two `generate_step` passes (a WARMUP-token pass after
an 8-token prompt, then P prompt tokens and G tokens, 512-token prefill steps),
and the bytes of the loaded weights. KV_BITS quantizes the KV cache from the first
token, as mlx-lm's `--kv-bits` does. It uses mlx-lm alone, nothing of vramscope.

The runs share this process (mlx-lm's import is a second of processor time a
process), each on its own: before a run's load, every array of the runs before it
has been freed (MLX's active memory back within STRAY_BYTES of what it was before
the first, or the run fails) and MLX's buffer cache emptied, so no other run's
buffers mix into its peak. The peaks read so were within the spread of one process a
run (2-3% between runs of either kind, on these sub-MB peaks).
"""

from __future__ import annotations

import gc
import json
import random
import sys
from pathlib import Path
from typing import Any

STRAY_BYTES = 4096
"""What an earlier run may leave held: mlx-lm keeps a few scalars of its first call
(8-10 bytes seen), not buffers that could move a peak by a measurable part."""


def run(
    folder: Path, prompt_tokens: int, gen_tokens: int, warmup: int, kv_bits: int | None
) -> dict[str, Any]:
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.generate import generate_step
    from mlx_lm.models.cache import make_prompt_cache
    from mlx_lm.utils import load_model

    mx.clear_cache()
    mx.reset_peak_memory()
    model, config = load_model(folder)
    weights = sum(v.nbytes for _, v in tree_flatten(model.parameters()))
    rng = random.Random(7)
    vocab = config["vocab_size"]
    for length, steps in ((min(8, prompt_tokens), warmup), (prompt_tokens, gen_tokens)):
        prompt = mx.array([rng.randrange(vocab) for _ in range(length)], dtype=mx.uint32)
        cache = make_prompt_cache(model)
        for _ in generate_step(
            prompt,
            model,
            max_tokens=steps,
            prompt_cache=cache,
            prefill_step_size=512,
            kv_bits=kv_bits,
            quantized_kv_start=0,
        ):
            pass
        del cache
    mx.synchronize()
    return {"peak_bytes": mx.get_peak_memory(), "weights_bytes": weights}


def main(argv: list[str]) -> None:
    prompt_tokens, gen_tokens, warmup = map(int, argv[:3])
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]  # not needed, slow
    import mlx.core as mx

    mx.set_default_device(mx.cpu)
    mx.synchronize()
    before = mx.get_active_memory()
    for spec in argv[3:]:
        folder, _, bits = spec.partition("@")
        gc.collect()
        mx.synchronize()
        left = mx.get_active_memory() - before
        if left > STRAY_BYTES:
            raise SystemExit(f"{left} bytes of an earlier run still held before {spec}")
        line = run(Path(folder), prompt_tokens, gen_tokens, warmup, int(bits) if bits else None)
        print(json.dumps({"run": spec, **line}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
