"""A short label for how a model's weights are stored, read from its files."""

from __future__ import annotations

from collections.abc import Mapping

from core.config import ModelConfig, as_u64

_DTYPE_LABELS = {"BF16": "BF16", "F16": "F16", "F32": "F32", "F8_E4M3": "FP8", "F8_E5M2": "FP8"}


def describe_format(config: ModelConfig | None, dtype_counts: Mapping[str, int]) -> str:
    """`MLX 4-bit g64`, `MLX mixed 4/8-bit g64`, `GPTQ 4-bit`, `BF16`, ... or `unknown`."""
    if config is not None:
        quant = config.root.get("quantization")
        if isinstance(quant, dict):
            bits = as_u64(quant.get("bits"))
            group = as_u64(quant.get("group_size"))
            mode = quant.get("mode")
            overrides = {
                as_u64(v.get("bits"))
                for v in quant.values()
                if isinstance(v, dict) and as_u64(v.get("bits")) is not None
            }
            overrides.discard(bits)
            prefix = "MLX" if not isinstance(mode, str) or mode == "affine" else f"MLX {mode}"
            if overrides and bits is not None:
                all_bits = "/".join(str(b) for b in sorted({bits, *overrides} - {None}))
                label = f"{prefix} mixed {all_bits}-bit"
            else:
                label = f"{prefix} {bits}-bit" if bits is not None else prefix
            return f"{label} g{group}" if group is not None else label
        qc = config.root.get("quantization_config")
        if isinstance(qc, dict):
            method = qc.get("quant_method")
            bits = as_u64(qc.get("bits"))
            if isinstance(method, str):
                name = method.upper()
                return f"{name} {bits}-bit" if bits is not None else name
    if dtype_counts:
        float_counts = {d: n for d, n in dtype_counts.items() if d in _DTYPE_LABELS}
        if float_counts:
            return _DTYPE_LABELS[max(float_counts, key=lambda d: float_counts[d])]
        return "/".join(sorted(dtype_counts))
    if config is not None:
        dtype = config.root.get("torch_dtype") or config.root.get("dtype")
        if isinstance(dtype, str):
            return {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}.get(dtype, dtype)
    return "unknown"
