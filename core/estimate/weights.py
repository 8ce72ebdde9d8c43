"""The weights term: exact bytes from safetensors, else an analytical count, else 7 B.

Order (first that answers wins), as mlxcel's `resolve_weight_bytes`:
1. `model.safetensors.index.json` when every listed shard exists: its
   `metadata.total_size`, else the sum of the shards' headers;
2. `model.safetensors`'s header (a failure here stops the safetensors search);
3. every `*.safetensors` file's header, sorted by name;
4. the analytical parameter count of `config.json` at 2 bytes per parameter;
5. 7 B parameters at 2 bytes (14,000,000,000 bytes).
Steps 1 to 3 read files (`core.model.weight_files`, joined in
`core.catalog.model_dir.resolve_weight_bytes`); this module is the term's types and
steps 4 and 5, arithmetic on the config.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from core.model.config import (
    EXPERT_COUNT_KEYS,
    HEAD_DIM_KEYS,
    HIDDEN_SIZE_KEYS,
    INTERMEDIATE_SIZE_KEYS,
    LAYER_COUNT_KEYS,
    MULTI_QUERY_KEY,
    NUM_HEADS_KEYS,
    NUM_KV_HEADS_KEYS,
    ModelConfig,
    as_f64,
    as_u64,
    get_f64,
)
from core.units import U64_MAX, f64_to_u64

FALLBACK_PARAMS_BILLIONS = 7.0


class WeightsSource(enum.Enum):
    """Where the weights term came from (JSON label, text label)."""

    SAFETENSORS_HEADER = ("safetensors_header", "safetensors header")
    ANALYTICAL_CONFIG = ("analytical_config", "analytical estimate from config.json")
    FALLBACK = ("fallback", "fallback (7 B params assumed)")
    GGUF_FILE_SIZE = ("gguf_file_size", "GGUF file size on disk")
    """vramscope's own, never mlxcel's: a GGUF row of the explorer's list, sized by its
    files on disk (header and all) until it is picked and its tensor infos are read."""

    @property
    def json_label(self) -> str:
        """The `weights_source` value of the JSON report."""
        return self.value[0]

    @property
    def text_label(self) -> str:
        """The bracketed source on the banner's `Weights:` line."""
        return self.value[1]


@dataclass(frozen=True)
class WeightsTerm:
    """The weights term in bytes, its source and what was ignored on the way."""

    bytes: int
    source: WeightsSource
    warnings: tuple[str, ...] = field(default=())
    files: tuple[str, ...] = field(default=())
    """The safetensors files whose headers or index gave the figure."""


ANALYTICAL_KEYS = frozenset(
    (
        *HIDDEN_SIZE_KEYS,
        *LAYER_COUNT_KEYS,
        "vocab_size",
        *INTERMEDIATE_SIZE_KEYS,
        *EXPERT_COUNT_KEYS,
        *NUM_HEADS_KEYS,
        *NUM_KV_HEADS_KEYS,
        *HEAD_DIM_KEYS,
    )
)
"""The keys mlxcel's analytical count reads, each as a float (`as_f64`): a negative or
fractional size the typed (u64) lookups skip as absent is a number here."""


def read_as_numbers(config: ModelConfig) -> list[str]:
    """The keys of `config` the KV cache and activation skip as absent (not unsigned
    integers) and the analytical count reads as numbers (`-1`, `4096.0`)."""
    text = config.text
    return [
        k for k in sorted(ANALYTICAL_KEYS)
        if k in text and as_u64(text[k]) is None and as_f64(text[k]) is not None
    ]  # fmt: skip


def _round_half_away(x: float) -> float:
    """Rust's `f64::round` (half away from zero); Python's `round` is half-to-even."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


def estimate_params_from_config(config: ModelConfig) -> float | None:
    """mlxcel's analytical parameter count in billions, or None without H or L."""
    text = config.text
    h = get_f64(text, HIDDEN_SIZE_KEYS)
    layers = get_f64(text, LAYER_COUNT_KEYS)
    if h is None or layers is None:
        return None
    v = get_f64(text, ("vocab_size",))
    v = 32000.0 if v is None else v
    f = get_f64(text, INTERMEDIATE_SIZE_KEYS)
    f = 4.0 * h if f is None else f
    e = get_f64(text, EXPERT_COUNT_KEYS)
    e = max(1.0 if e is None else e, 1.0)
    nh = get_f64(text, NUM_HEADS_KEYS)
    nh = h / 64.0 if nh is None else nh
    kvh = get_f64(text, NUM_KV_HEADS_KEYS)
    if kvh is None:
        kvh = 1.0 if text.get(MULTI_QUERY_KEY) is True else nh
    hd = get_f64(text, HEAD_DIM_KEYS)
    if hd is None:
        ratio = h / nh if nh > 0 else math.nan
        hd = _round_half_away(ratio) if nh > 0 and math.isfinite(ratio) else 64.0
    # Upstream's operation order, term by term: K and V are two products, not
    # `2.0 * h * (kvh * hd)`, which overflows to inf at H near 1e308 and turns
    # `inf * 0` (KVH 0) into NaN, so 0 bytes, where mlxcel's sum saturates.
    attention = h * (nh * hd) + h * (kvh * hd) + h * (kvh * hd) + (nh * hd) * h
    mlp = 3.0 * h * f * e
    norms = 2.0 * h
    params = v * h + layers * (attention + mlp + norms)
    return params / 1e9


def params_billions_to_bytes(billions: float) -> int:
    """`trunc(min(max(P * 1e9 * 2.0, 0), U64_MAX))` (FP16-equivalent bytes)."""
    x = billions * 1e9 * 2.0
    if math.isnan(x):
        return 0
    return f64_to_u64(min(max(x, 0.0), float(U64_MAX)))


def weights_from_config(
    config: ModelConfig | None, warnings: list[str] | None = None
) -> WeightsTerm:
    """Steps 4 and 5: the analytical count, else the 7 B fallback."""
    notes = tuple(warnings or ())
    billions = estimate_params_from_config(config) if config is not None else None
    if billions is not None:
        return WeightsTerm(
            params_billions_to_bytes(billions), WeightsSource.ANALYTICAL_CONFIG, notes
        )
    return WeightsTerm(
        params_billions_to_bytes(FALLBACK_PARAMS_BILLIONS), WeightsSource.FALLBACK, notes
    )
