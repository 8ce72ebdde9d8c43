"""Per-rank estimates for tensor- and pipeline-parallel MLX loads (vramscope's own terms).

For each rank r of a plan over N ranks, the single-device formula is applied to
what that rank holds, following mlx-lm's sharding (core/parallel/sharding.py):

    W_r = bytes of the tensors rank r loads (sharded tensors divided along their
          split axis, replicated tensors whole; pipeline: its layers + every
          non-layer tensor)
    K_r = KV of its KV heads (TP: KVH/N per layer) or of its layers (PP)
    O_r = trunc((W_r + K_r) * (factor - 1))
    A_r = activation for its shapes (TP: intermediate/N; PP: the full shapes,
          and every stage computes the logits)
    I_r = the in-flight budget, once per ROCm device (0 elsewhere)
    total_r = W_r + K_r + O_r + A_r + I_r      (saturating)
    load_r  = TP: W + 2 x the largest slice (every tensor whole, briefly, while
              sharded_load slices them; the slice being cut is copied twice)
              PP: W_r
    peak_r  = max(load_r, total_r)

Each rank has its own available memory and fits when peak_r fits in it; the plan
fits when every rank fits.
The single-device estimate (core/estimate/estimate.py) is untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from core.errors import ShardingError
from core.estimate.estimate import EstimateSettings, MemoryEstimate, Workload, estimate, estimate_of
from core.estimate.kv_cache import KvArch, KvGroup, KvKind, attn_dims
from core.estimate.snapshot import ModelSnapshot
from core.model.config import NUM_HEADS_KEYS, ActivationDims, get_u64
from core.model.safetensors_header import tensor_bytes
from core.parallel.sharding import (
    HeadCounts,
    ParallelKind,
    ShardRule,
    check_family,
    check_heads,
    layer_of,
    mlx_lm_family,
    pipeline_ranges,
    rank_tensor_bytes,
    tensor_rule,
)
from core.units import sat_add, sat_sub
from core.value_grammar import Refused, read_byte_size

Tensor = tuple[str, str, tuple[int, ...]]
MAX_RANKS = 8


@dataclass(frozen=True)
class ParallelPlan:
    """N ranks of one kind (tensor or pipeline parallel)."""

    kind: ParallelKind
    ranks: int

    def __post_init__(self) -> None:
        # One rank is the single device (the whole model, loaded whole: core.answer).
        if not 1 <= self.ranks <= MAX_RANKS:
            raise ShardingError(
                f"--{self.kind.value}: expected 1 to {MAX_RANKS} ranks, got {self.ranks}"
            )

    @property
    def flag(self) -> str:
        """`--tp 2` / `--pp 2`."""
        return f"--{self.kind.value} {self.ranks}"


@dataclass(frozen=True)
class RankShare:
    """What one rank holds, independent of the workload."""

    rank: int
    sharded_weight_bytes: int
    """Bytes of the tensors split across ranks that this rank holds."""
    replicated_weight_bytes: int
    """Bytes of the tensors every rank holds whole."""
    layers: tuple[int, int] | None
    """[start, end) of its decoder layers under PP; None under TP (every layer)."""
    kv_heads: int | None
    """KV heads per layer this rank caches (TP: KVH / N)."""
    kv_arch: KvArch | None
    """This rank's KV layout (for per-token figures); None where the model has none (one
    device: the whole model as read)."""
    load_peak_bytes: int
    """What the rank holds while loading. TP: every tensor of the checkpoint whole
    (W, the single-device weights), because sharded_load's one
    `mx.eval(model.parameters())` reads each tensor whole before slicing it, plus
    two copies of the largest slice (concatenate, contiguous). PP: its own weights
    (only its layers are evaluated)."""
    activation_dims: ActivationDims | None


@dataclass(frozen=True)
class RankEstimate(RankShare):
    """A rank's share with its estimate for one workload: its terms as a single-device
    estimate of what it holds."""

    estimate: MemoryEstimate

    @classmethod
    def of(cls, share: RankShare, estimate: MemoryEstimate) -> RankEstimate:
        """The share's estimate."""
        held = {f.name: getattr(share, f.name) for f in fields(RankShare)}
        return cls(**held, estimate=estimate)

    @property
    def peak_bytes(self) -> int:
        """The larger of the load peak and the running total: what must fit."""
        return max(self.load_peak_bytes, self.estimate.total_bytes)

    @property
    def fits(self) -> bool:
        """The rank fits when its peak (load or run) fits its memory."""
        return self.peak_bytes <= self.estimate.available_bytes

    @property
    def slack_bytes(self) -> int:
        """Memory left at the rank's peak, else 0."""
        return sat_sub(self.estimate.available_bytes, self.peak_bytes)

    @property
    def overflow_bytes(self) -> int:
        """Bytes over the rank's memory at its peak, else 0."""
        return sat_sub(self.peak_bytes, self.estimate.available_bytes)


@dataclass(frozen=True)
class ParallelEstimate:
    """Every rank's estimate and the plan's verdict."""

    plan: ParallelPlan
    family: str
    ranks: tuple[RankEstimate, ...]
    single: MemoryEstimate
    """The single-device estimate of the same model and workload (mlxcel's)."""

    @property
    def fits(self) -> bool:
        """The plan fits when every rank fits."""
        return all(r.fits for r in self.ranks)

    @property
    def total_bytes(self) -> int:
        """Sum of the ranks' totals."""
        return sat_add(*(r.estimate.total_bytes for r in self.ranks))

    @property
    def available_bytes(self) -> int:
        """Sum of the ranks' available memory."""
        return sat_add(*(r.estimate.available_bytes for r in self.ranks))

    @property
    def weights_bytes(self) -> int:
        """Sum of the ranks' weights (replicated tensors counted on every rank)."""
        return sat_add(*(r.estimate.weights_bytes for r in self.ranks))

    @property
    def kv_bytes(self) -> int:
        """Sum of the ranks' KV."""
        return sat_add(*(r.estimate.kv_bytes for r in self.ranks))

    @property
    def failing_ranks(self) -> tuple[int, ...]:
        """Ranks that do not fit."""
        return tuple(r.rank for r in self.ranks if not r.fits)


def parse_rank_limits(text: str | None, ranks: int) -> list[int] | None:
    """`--memory-limit SIZE[,SIZE...]`: one size for every rank or one per rank."""
    if text is None or text.strip().lower() in ("", "0", "none"):
        return None
    parts = [p.strip() for p in text.split(",")]
    sizes: list[int] = []
    for part in parts:
        size = read_byte_size(part, minimum=1)  # vramscope's grammar, as the one-size flag
        if isinstance(size, Refused):
            raise ShardingError(f"--memory-limit: {size.reason}")
        sizes.append(size)
    if len(sizes) == 1:
        return sizes * ranks
    if len(sizes) != ranks:
        raise ShardingError(
            f"--memory-limit: {len(sizes)} sizes for {ranks} ranks (give one, or one per rank)"
        )
    return sizes


def _standard_kv(model: ModelSnapshot, kind: ParallelKind) -> KvArch:
    arch = model.kv_arch
    if arch is None:
        raise ShardingError(
            f"{kind.label}: the KV architecture is unavailable (config.json lacks the fields)"
        )
    if arch.kind is not KvKind.STANDARD:
        raise ShardingError(
            f"{kind.label}: per-rank KV for {arch.kind.value} is not modelled "
            "(standard attention only)"
        )
    return arch


def _heads(model: ModelSnapshot) -> HeadCounts:
    assert model.config is not None  # checked by the family lookup
    dims = attn_dims(model.config.text)
    heads = max(get_u64(model.config.text, NUM_HEADS_KEYS) or 1, 1)
    if dims is None:
        raise ShardingError("tensor parallel: config.json has no hidden size or head_dim")
    return HeadCounts(heads, dims[0])


def _rank_estimate(
    weights: int,
    arch: KvArch | None,
    dims: ActivationDims | None,
    workload: Workload,
    settings: EstimateSettings,
    available: int,
    model: ModelSnapshot,
) -> MemoryEstimate:
    return estimate_of(weights, model.weights.source, arch, dims, workload, settings, available)


@dataclass(frozen=True)
class ParallelSplit:
    """A model split by mlx-lm's rules: read the tensors once, then size any workload."""

    plan: ParallelPlan
    family: str
    shares: tuple[RankShare, ...]


def split_model(
    model: ModelSnapshot, tensors: Sequence[Tensor], plan: ParallelPlan
) -> ParallelSplit:
    """Each rank's share of the model (ShardingError when mlx-lm could not split it)."""
    if model.config is None:
        raise ShardingError(f"{plan.kind.label}: no config.json, so the family is unknown")
    family = mlx_lm_family(model.config.raw_model_type)
    check_family(family, plan.kind)
    if not tensors:
        raise ShardingError(
            f"{plan.kind.label}: no tensor shapes to split (no safetensors headers)"
        )
    arch = _standard_kv(model, plan.kind)
    n = plan.ranks
    shares: list[RankShare] = []
    if plan.kind is ParallelKind.TENSOR:
        heads = _heads(model)
        check_heads(heads, n)
        sharded = replicated = largest_slice = 0
        for name, dtype, shape in tensors:
            size = rank_tensor_bytes(name, dtype, shape, n)
            if tensor_rule(name) is ShardRule.REPLICATED:
                replicated = sat_add(replicated, size)
            else:
                sharded = sat_add(sharded, size)
                largest_slice = max(largest_slice, size)
        groups = tuple(replace(g, elems_per_token=g.elems_per_token // n) for g in arch.groups)
        rank_arch = KvArch(
            arch.kind, groups, f"{arch.detail}; {heads.kv_heads // n} of {heads.kv_heads} KV heads"
        )
        dims = model.activation_dims
        if dims is not None:
            dims = replace(dims, intermediate=dims.intermediate // n)
        # Every tensor read whole (one mx.eval runs the loads), plus the concatenate and
        # contiguous copies of the slice being cut (mlx.nn.layers.distributed._shard).
        whole = sat_add(*(tensor_bytes(d, s) for _, d, s in tensors), 2 * largest_slice)
        for r in range(n):
            shares.append(
                RankShare(r, sharded, replicated, None, heads.kv_heads // n, rank_arch, whole, dims)
            )
    else:
        layer_count = sum(g.layers for g in arch.groups)
        ranges = pipeline_ranges(layer_count, n)
        per_layer: dict[int, int] = {}
        replicated = 0
        for name, dtype, shape in tensors:
            layer = layer_of(name)
            size = tensor_bytes(dtype, shape)
            if layer is None:
                replicated = sat_add(replicated, size)
            else:
                per_layer[layer] = sat_add(per_layer.get(layer, 0), size)
        elems = arch.groups[0].elems_per_token
        for r, (start, end) in enumerate(ranges):
            own = sat_add(*(per_layer.get(i, 0) for i in range(start, end)))
            rank_arch = KvArch(
                arch.kind,
                (KvGroup(end - start, elems, None),),
                f"standard attention (layers {start}-{end - 1} of {layer_count}, full context)",
            )
            shares.append(
                RankShare(
                    r,
                    own,
                    replicated,
                    (start, end),
                    None,
                    rank_arch,
                    sat_add(own, replicated),
                    model.activation_dims,
                )
            )
    return ParallelSplit(plan, family, tuple(shares))


def estimate_split(
    model: ModelSnapshot,
    split: ParallelSplit,
    workload: Workload,
    settings: EstimateSettings,
    rank_available: Sequence[int] | None = None,
) -> ParallelEstimate:
    """Every rank's estimate for a workload (cheap: no tensor is looked at again)."""
    n = split.plan.ranks
    available = list(rank_available) if rank_available else [settings.available.bytes] * n
    if len(available) != n:
        raise ShardingError(f"{len(available)} available-memory values for {n} ranks")
    out = []
    for share in split.shares:
        est = _rank_estimate(
            sat_add(share.sharded_weight_bytes, share.replicated_weight_bytes),
            share.kv_arch,
            share.activation_dims,
            workload,
            settings,
            available[share.rank],
            model,
        )
        out.append(RankEstimate.of(share, est))
    return ParallelEstimate(
        split.plan, split.family, tuple(out), estimate(model, workload, settings)
    )


def estimate_parallel(
    model: ModelSnapshot,
    tensors: Sequence[Tensor],
    plan: ParallelPlan,
    workload: Workload,
    settings: EstimateSettings,
    rank_available: Sequence[int] | None = None,
) -> ParallelEstimate:
    """Each rank's estimate under mlx-lm's sharding (ShardingError when it cannot run)."""
    return estimate_split(
        model, split_model(model, tensors, plan), workload, settings, rank_available
    )
