"""mlx-lm's sharding rules, per family and per tensor (read from mlx-lm 0.32.2's source).

Tensor parallel (`Model.shard(group)`): in every decoder layer q/k/v and
gate/up become "all-to-sharded" linears (each rank keeps 1/N of the output
rows: weight axis `ndim-2`, a linear's `.bias` on its last axis), o/down become
"sharded-to-all" (1/N of the input columns: the last axis; the `.bias` stays
whole), and `n_heads`, `n_kv_heads` are divided by N. A quantized weight's
`.scales` and `.biases` are sharded along the same axis as the packed weight
(`mlx.nn.layers.distributed._shard`). MoE expert stacks (`switch_mlp`) split
the same way per expert; the router, norms, embeddings and the LM head stay
whole on every rank. `mx.split` needs every split axis to divide by N, and
mlx-lm's `n_heads //= N` needs the head counts to; anything else fails at load
(or computes garbage), so it is refused here.

Pipeline parallel (`model.model.pipeline(group)`): layers split evenly, the
low ranks taking the extra layers, and rank 0 runs the *last* layers (rank r
runs the layers after those of ranks r+1..N-1). Every stage keeps the
embeddings, the final norm and the LM head (`sharded_load` downloads the files
of every non-layer tensor on every rank, and every rank computes the logits).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from core.errors import ShardingError
from core.kind import Kind
from core.model.safetensors_header import tensor_bytes

MLX_LM_VERSION = "0.32.2"

# mlx-lm's MODEL_REMAPPING entries that land on a family modelled here.
_REMAP = {"mistral": "llama", "iquestcoder": "llama", "xverse": "llama"}

# Families whose mlx-lm module defines `Model.shard` / a `pipeline` (PipelineMixin).
MLX_LM_TP_FAMILIES = frozenset(
    [
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_v41",
        "exaone_moe",
        "glm4_moe",
        "glm4_moe_lite",
        "gpt_oss",
        "iquestloopcoder",
        "kimi_k25",
        "kimi_k3",
        "llama",
        "longcat_flash",
        "longcat_flash_ngram",
        "minimax",
        "minimax_m3_vl",
        "ministral3",
        "mistral4",
        "muse_spark",
        "qwen2",
        "qwen3",
        "qwen3_5",
        "qwen3_moe",
        "step3p5",
    ]
)
MLX_LM_PP_FAMILIES = frozenset(
    [
        "bailing_hybrid",
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_v41",
        "glm4_moe",
        "glm4_moe_lite",
        "kimi_k3",
        "minimax_m3_vl",
        "ministral3",
        "mistral4",
        "muse_spark",
        "qwen2",
        "qwen3_5",
        "qwen3_moe",
        "qwen3_next",
    ]
)
# The families whose shard()/pipeline() vramscope models tensor by tensor.
MODELLED_FAMILIES = frozenset({"llama", "qwen2", "qwen3", "qwen3_moe"})


class ParallelKind(Kind):
    """How the model is split across ranks."""

    TENSOR = "tp"
    PIPELINE = "pp"

    @property
    def label(self) -> str:
        """Display name."""
        return "tensor parallel" if self is ParallelKind.TENSOR else "pipeline parallel"


class ShardRule(enum.Enum):
    """What one rank holds of a tensor under tensor parallelism."""

    REPLICATED = "replicated"
    ALL_TO_SHARDED = "all-to-sharded"
    SHARDED_TO_ALL = "sharded-to-all"


_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_SHARDED = re.compile(
    r"\.layers\.\d+\.(?:self_attn\.(?P<attn>q_proj|k_proj|v_proj|o_proj)"
    r"|mlp\.(?:switch_mlp\.|experts\.\d+\.)?(?P<mlp>gate_proj|up_proj|down_proj))"
    r"\.(?P<param>weight|scales|biases|bias)$"
)
_TO_ALL = frozenset({"o_proj", "down_proj"})


def mlx_lm_family(model_type: str | None) -> str:
    """The mlx-lm module a config's root `model_type` loads (after its remapping)."""
    slug = (model_type or "").lower()
    return _REMAP.get(slug, slug)


def check_family(family: str, kind: ParallelKind) -> None:
    """Raise ShardingError unless mlx-lm can split this family this way and vramscope models it."""
    shown = family or "(no model_type)"
    supported = MLX_LM_TP_FAMILIES if kind is ParallelKind.TENSOR else MLX_LM_PP_FAMILIES
    method = "Model.shard()" if kind is ParallelKind.TENSOR else "model.pipeline()"
    if family not in supported:
        raise ShardingError(
            f"{kind.label}: mlx-lm {MLX_LM_VERSION} cannot split '{shown}' models "
            f"(mlx_lm.models.{shown} has no {method})"
        )
    if family not in MODELLED_FAMILIES:
        raise ShardingError(
            f"{kind.label}: mlx-lm can split '{shown}' models, but vramscope models the "
            f"sharding of {', '.join(sorted(MODELLED_FAMILIES))} only"
        )


def layer_of(name: str) -> int | None:
    """The decoder layer a checkpoint tensor belongs to (mlx-lm's own regex), else None."""
    m = _LAYER.search(name)
    return int(m.group(1)) if m else None


def tensor_rule(name: str) -> ShardRule:
    """The tensor-parallel rule of a checkpoint tensor of a modelled family."""
    m = _SHARDED.search("." + name)
    if m is None:
        return ShardRule.REPLICATED
    proj = m.group("attn") or m.group("mlp")
    if proj in _TO_ALL:
        # A sharded-to-all linear keeps its bias whole (it is added after the all-reduce).
        return ShardRule.REPLICATED if m.group("param") == "bias" else ShardRule.SHARDED_TO_ALL
    return ShardRule.ALL_TO_SHARDED


def split_axis(name: str, rule: ShardRule, ndim: int) -> int | None:
    """The axis mlx's `_all_to_sharded` / `_sharded_to_all` predicates split, else None."""
    if rule is ShardRule.REPLICATED or ndim == 0:
        return None
    if rule is ShardRule.SHARDED_TO_ALL or name.endswith(".bias"):
        return ndim - 1
    return max(ndim - 2, 0)


def rank_tensor_bytes(name: str, dtype: str, shape: tuple[int, ...], ranks: int) -> int:
    """Bytes one tensor-parallel rank holds of a tensor (every rank holds the same)."""
    rule = tensor_rule(name)
    axis = split_axis(name, rule, len(shape))
    if axis is None:
        return tensor_bytes(dtype, shape)
    if shape[axis] % ranks:
        raise ShardingError(
            f"tensor parallel {ranks}: {name} {list(shape)} cannot be split {ranks} ways "
            f"along axis {axis} ({rule.value}; mx.split needs equal parts)"
        )
    return tensor_bytes(dtype, (*shape[:axis], shape[axis] // ranks, *shape[axis + 1 :]))


def pipeline_ranges(layers: int, ranks: int) -> list[tuple[int, int]]:
    """[start, end) of each rank's layers, exactly as mlx-lm's `PipelineMixin.pipeline`."""
    if layers < ranks:
        raise ShardingError(
            f"pipeline parallel {ranks}: the model has {layers} layer(s); mlx-lm needs at "
            "least one per rank"
        )
    base, extra = divmod(layers, ranks)
    split = [base + (1 if r < extra else 0) for r in range(ranks)]
    out = []
    for r in range(ranks):
        start = sum(split[r + 1 :])
        out.append((start, start + split[r]))
    return out


@dataclass(frozen=True)
class HeadCounts:
    """Attention heads a tensor-parallel split must divide."""

    heads: int
    kv_heads: int


def check_heads(counts: HeadCounts, ranks: int) -> None:
    """mlx-lm divides heads and KV heads by N with `//=`: refuse what does not divide."""
    for what, n in (("attention heads", counts.heads), ("KV heads", counts.kv_heads)):
        if n % ranks:
            raise ShardingError(
                f"tensor parallel {ranks}: {n} {what} do not divide by {ranks} "
                f"(mlx-lm sets n_heads //= {ranks}, which would drop heads); "
                f"use a size that divides {n}"
            )
