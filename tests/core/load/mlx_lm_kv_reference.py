"""mlx-lm's own caches for a tiny model it writes itself, for the load's KV tests.

    python -m tests.core.load.mlx_lm_kv_reference SPEC_JSON FOLDER

SPEC_JSON: {"config": {...}, "dtype": "bfloat16", "quantize_bits": null,
"cases": [[P, G, kv_bits, quantized_kv_start], ...]}. The model is built from the
sparse config by mlx-lm's own class (`mlx_lm.models.<module>.Model`), its weights
written with `mx.save_safetensors` and config.json beside them into FOLDER, and read
back with `mlx_lm.utils.load_model`. For each case `generate_step` runs P prompt tokens
and G generated ones into a fresh `make_prompt_cache` (with `"drive": true`, the caches
are fed on generate_step's schedule without the model's forward); one JSON line a case gives
`sum(c.nbytes for c in cache)`, the cache classes and `mx.get_peak_memory()` over
the case (reset before it; the weights stay counted). mlx-lm alone, nothing of
vramscope, in a process of its own.

    python -m tests.core.load.mlx_lm_kv_reference --many SPECS_JSON ROOT

SPECS_JSON: {"name": SPEC, ...}. Each model in turn, written into ROOT/name, in this
one process: mlx-lm's import (a second of processor time) is paid once, not once a
family. The random seed is set again before each model is built, so each is written
as a process of its own would write it. Before each model every array of the ones
before it has been freed (MLX's active memory back within STRAY_BYTES of what it was
before the first, or that family fails) and MLX's buffer cache is emptied, so its
`peak_bytes` holds nothing of theirs: the four peaks of tests/core/load/test_load_peaks.py
read so were within 0.4% of a process of their own (0.8% between two of those), in
its order; a model's peak can still move with the one run before it (gemma3_text's
read 1.4% higher after qwen3's than first). Every
line carries `"family": name`; a family that fails gives one
`{"family": name, "error": ...}` line and the others go on.
"""

from __future__ import annotations

import copy
import gc
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STRAY_BYTES = 4096
"""What the models before one may leave held: mlx-lm keeps a few scalars of its first
calls (up to 62 bytes seen), not buffers that could move a peak by a measurable part."""


def write_model(spec: dict[str, Any], folder: Path) -> None:
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten
    from mlx_lm.utils import _get_classes

    config = dict(spec["config"])
    model_class, args_class = _get_classes(config)
    model = model_class(args_class.from_dict(config))
    dtype = getattr(mx, spec.get("dtype", "bfloat16"))
    model.set_dtype(dtype)
    bits = spec.get("quantize_bits")
    if bits:
        nn.quantize(model, group_size=64, bits=bits)
        config["quantization"] = {"group_size": 64, "bits": bits}
    folder.mkdir(parents=True, exist_ok=True)
    weights = dict(tree_flatten(model.parameters()))
    mx.save_safetensors(str(folder / "model.safetensors"), weights, {"format": "mlx"})
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")


def main(argv: list[str]) -> None:
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]  # not needed, slow
    import mlx.core as mx

    mx.set_default_device(mx.cpu)
    if argv[0] == "--many":
        specs, root = json.loads(argv[1]), Path(argv[2])
        mx.synchronize()
        before = mx.get_active_memory()
        for name, spec in specs.items():
            gc.collect()  # the model before this one, and whatever held it
            mx.synchronize()
            mx.clear_cache()
            left = mx.get_active_memory() - before
            try:
                if left > STRAY_BYTES:
                    raise RuntimeError(f"{left} bytes of the models before it still held")
                for line in measure(spec, root / name):
                    print(json.dumps({"family": name, **line}), flush=True)
            except Exception as exc:  # one family's failure is that family's test's
                error = f"{type(exc).__name__}: {exc}"
                print(json.dumps({"family": name, "error": error}), flush=True)
            mx.clear_cache()
        return
    for line in measure(json.loads(argv[0]), Path(argv[1])):
        print(json.dumps(line), flush=True)


def measure(spec: dict[str, Any], folder: Path) -> Iterator[dict[str, Any]]:
    """One model: written, read back by mlx-lm, and one line a case."""
    import mlx.core as mx
    from mlx_lm.generate import generate_step
    from mlx_lm.models.cache import make_prompt_cache
    from mlx_lm.utils import load_model

    mx.random.seed(3)
    write_model(spec, folder)
    model, config = load_model(folder)
    vocab = int(spec["config"].get("vocab_size") or config.get("vocab_size") or 32)
    if spec.get("drive"):
        yield from drive(model, spec["cases"])
        return
    for prompt_tokens, generated, kv_bits, start in spec["cases"]:
        prompt = mx.array([(7 * i) % vocab for i in range(prompt_tokens)], dtype=mx.uint32)
        mx.clear_cache()
        mx.reset_peak_memory()  # the weights stay counted: they are active
        cache = make_prompt_cache(model)
        for _ in generate_step(
            prompt,
            model,
            max_tokens=generated,
            prompt_cache=cache,
            kv_bits=kv_bits,
            quantized_kv_start=start,
        ):
            pass
        mx.eval([c.state for c in cache])
        yield {
            "case": [prompt_tokens, generated, kv_bits, start],
            "kv_bytes": sum(c.nbytes for c in cache),
            "classes": sorted({type(c).__name__ for c in cache}),
            "layers": len(cache),
            "peak_bytes": mx.get_peak_memory(),
        }


def drive(model: Any, cases: list[list[int]]) -> Iterator[dict[str, Any]]:
    """The caches alone, for a shape too large to run on a CPU: `make_prompt_cache`'s
    caches fed keys and values of each layer's shape on `generate_step`'s schedule
    (2,048-token chunks of the prompt but its last token, then one token a call).

    The steps every case's schedule begins with are fed once; each case then goes on
    from a `copy.deepcopy` of those caches (as mlx-lm's own prompt-cache reuse does),
    the last case from the caches themselves. An MLX array is never changed in place
    while another holds its buffer, so no case sees another's steps. gemma3's two 32k
    cases share 15 of their 16 chunks (their test: 11.2 -> 7.9-8.3 s of processor time
    in paired runs)."""
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache

    layer = model.layers[0].self_attn
    heads, head_dim = layer.n_kv_heads, layer.head_dim

    def feed(cache: list[Any], sizes: list[int]) -> None:
        for size in sizes:
            kv = mx.zeros((1, heads, size, head_dim), dtype=mx.bfloat16)
            for c in cache:
                c.update_and_fetch(kv, kv)
            mx.eval([c.state for c in cache])

    schedules = [_schedule(prompt_tokens, generated) for prompt_tokens, generated, *_ in cases]
    common = 0
    while all(len(s) > common and s[common] == schedules[0][common] for s in schedules):
        common += 1
    shared = make_prompt_cache(model)
    feed(shared, schedules[0][:common])
    for i, (case, sizes) in enumerate(zip(cases, schedules, strict=True)):
        cache = shared if i == len(cases) - 1 else copy.deepcopy(shared)
        feed(cache, sizes[common:])
        yield {"case": case[:2], "kv_bytes": sum(c.nbytes for c in cache)}
        del cache


def _schedule(prompt_tokens: int, generated: int) -> list[int]:
    """The tokens of each `generate_step` call: 2,048-token chunks of the prompt but its
    last token, then that token, then one call per generated token."""
    left, sizes = prompt_tokens - 1, []
    while left > 0:
        sizes.append(min(2048, left))
        left -= sizes[-1]
    return sizes + [1] * (1 + generated)


if __name__ == "__main__":
    main(sys.argv[1:])
