"""The question every surface asks: this model, this workload, on this device, split so.

Typed, frozen, and complete: the model (read once, `ModelFacts`), the workload
(mlxcel's `Workload`: context, batch, KV dtype, quant hint), vramscope's what-if
quantization, the device (`core.answer.device.Device`: backend, identity, available
memory and where that figure came from), the split, and the estimate's knobs (the
in-flight budget, the overhead factor, the activation multiplier).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from core.answer.device import Device
from core.answer.quantization import Quantization
from core.estimate.activation import ACTIVATION_BUFFER_MULT
from core.estimate.estimate import EstimateSettings, Workload
from core.estimate.headroom import DEFAULT_HEADROOM_FACTOR
from core.estimate.inflight import ROCM_DEFAULT_MAX_INFLIGHT_MB
from core.estimate.snapshot import ModelSnapshot
from core.parallel.sharding import ParallelKind

Tensor = tuple[str, str, tuple[int, ...]]

MAX_RANKS = 8


@dataclass(frozen=True)
class Split:
    """N ranks of one kind; N = 1 is the single device (the whole model on one rank)."""

    kind: ParallelKind = ParallelKind.TENSOR
    ranks: int = 1
    rank_available: tuple[int, ...] | None = None
    """One available memory per rank; None: every rank has the device's."""

    @property
    def flag(self) -> str:
        """`--tp 2` / `--pp 2`."""
        return f"--{self.kind.value} {self.ranks}"


ONE_DEVICE = Split()


@dataclass(frozen=True)
class Question:
    """Will this model fit this device, and by how much?"""

    workload: Workload
    device: Device
    quantize_as: Quantization = Quantization.STORED
    split: Split = ONE_DEVICE
    inflight_mib: int = ROCM_DEFAULT_MAX_INFLIGHT_MB
    """`MLX_ROCM_MAX_INFLIGHT_MB` (or `--inflight-mb`) after parsing; counted on ROCm only."""
    headroom_factor: float = DEFAULT_HEADROOM_FACTOR
    activation_mult: float = ACTIVATION_BUFFER_MULT

    @property
    def settings(self) -> EstimateSettings:
        """mlxcel's estimate settings for this question's device and knobs."""
        return EstimateSettings(
            backend=self.device.backend,
            available=self.device.available,
            headroom_factor=self.headroom_factor,
            activation_mult=self.activation_mult,
            inflight_mib=self.inflight_mib,
        )


@dataclass(frozen=True, eq=False)
class ModelFacts:
    """A model as read once: its snapshot, the what-ifs' weights, its tensor list."""

    snapshot: ModelSnapshot
    name: str = ""
    """The model as the user knows it (a repo id, a folder name); the snapshot's
    display name when empty."""
    what_ifs: Mapping[Quantization, int | str] = field(default_factory=dict)
    """Per what-if: the weight bytes mlx-lm's conversion would write, or why none."""
    tensors: Sequence[Tensor] | None = None
    """The stored tensors (names, dtypes, shapes), for splits; None: not read."""
    _splits: dict[object, object] = field(default_factory=dict, repr=False)
    """Splits already computed, by plan (splitting reads every tensor once)."""
    _loads: dict[object, object] = field(default_factory=dict, repr=False)
    """Load plans already read (`core.load`), by what they depend on."""

    @property
    def label(self) -> str:
        """The name to show."""
        return self.name or self.snapshot.display
