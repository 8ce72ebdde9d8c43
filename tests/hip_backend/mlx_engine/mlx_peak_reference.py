"""An independent mlx-lm run of the bench workload, for the mlx engine's tests.

    python -m tests.hip_backend.mlx_engine.mlx_peak_reference FOLDER P G WARMUP [KV_BITS]

prints one JSON object: MLX's peak (mx.get_peak_memory, reset before the load) over
`mlx_lm.utils.load_model` and two `generate_step` passes (a WARMUP-token pass after
an 8-token prompt, then P prompt tokens and G tokens, 512-token prefill steps),
and the bytes of the loaded weights. KV_BITS quantizes the KV cache from the first
token, as mlx-lm's `--kv-bits` does. It uses mlx-lm alone, nothing of vramscope,
and runs in a process of its own so that no other run's buffers mix into its peak.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    folder, prompt_tokens, gen_tokens, warmup = Path(argv[0]), *map(int, argv[1:4])
    kv_bits = int(argv[4]) if len(argv) > 4 else None
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]  # not needed, slow
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.generate import generate_step
    from mlx_lm.models.cache import make_prompt_cache
    from mlx_lm.utils import load_model

    mx.set_default_device(mx.cpu)
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
    print(json.dumps({"peak_bytes": mx.get_peak_memory(), "weights_bytes": weights}))


if __name__ == "__main__":
    main(sys.argv[1:])
