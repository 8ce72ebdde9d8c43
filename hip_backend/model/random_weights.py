"""Writing a model folder of random weights, for benchmarks and device checks.

The tensor list is what mlx-lm would write for the config (`layout.py`): U32
words, scales and biases for quantized modules, the float dtype elsewhere; the
file is an MLX-style safetensors file (compact sorted header, `format: mlx`).
Values are random bits with scales that keep activations finite. Needs numpy;
no mlx, no torch.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from core.model.config import ModelConfig
from core.model.quant_scheme import QuantParams
from core.model.safetensors_header import DTYPE_ITEMSIZE
from hip_backend.model.arch import arch_from_config
from hip_backend.model.layout import TensorShape, module_specs, stored_tensors


def write_random_model(dest: Path, config: dict[str, Any], seed: int = 0) -> Path:
    """Write `config.json` and one `model.safetensors` of random data into `dest`."""
    import numpy as np

    arch = arch_from_config(ModelConfig.from_dict(config))
    planned = [
        (t, spec.quant, spec.in_features)
        for spec in module_specs(arch)
        for t in stored_tensors(spec, arch.float_dtype)
    ]
    header: dict[str, Any] = {"__metadata__": {"format": "mlx"}}
    offset = 0
    for t, _, _ in planned:
        size = DTYPE_ITEMSIZE[t.dtype] * int(np.prod(t.shape, dtype=np.int64))
        header[t.name] = {
            "dtype": t.dtype,
            "shape": list(t.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    raw = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    rng = np.random.default_rng(seed)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "config.json").write_text(json.dumps(config, indent=4, sort_keys=True))
    with (dest / "model.safetensors").open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        for t, quant, fan_in in planned:
            fh.write(_random_bytes(rng, t, quant, fan_in))
    return dest


def _random_bytes(rng: Any, t: TensorShape, quant: QuantParams | None, fan_in: int) -> bytes:
    """Random words, or floats so that dequantized weights lie in +-1/sqrt(fan_in)."""
    import numpy as np

    count = int(np.prod(t.shape, dtype=np.int64))
    if t.dtype == "U32":
        return bytes(rng.integers(0, 2**32, size=count, dtype=np.uint32).tobytes())
    bound = 1.0 / np.sqrt(max(1, fan_in))
    if t.name.endswith(".scales") and quant is not None:
        values = np.full(count, 2.0 * bound / ((1 << quant.bits) - 1), dtype=np.float32)
    elif t.name.endswith(".biases"):
        values = np.full(count, -bound, dtype=np.float32)
    elif t.name.endswith("norm.weight"):
        values = np.ones(count, dtype=np.float32)
    elif t.name.endswith(".bias"):
        values = np.zeros(count, dtype=np.float32)
    else:
        values = rng.uniform(-bound, bound, size=count).astype(np.float32)
    if t.dtype == "F32":
        return bytes(values.tobytes())
    if t.dtype == "F16":
        return bytes(values.astype(np.float16).tobytes())
    # BF16: the top half of each float32 (truncation is fine for random values).
    return bytes((values.view(np.uint32) >> 16).astype(np.uint16).tobytes())
