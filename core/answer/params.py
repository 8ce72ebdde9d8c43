"""The model's parameter counts: total, and active per token for a mixture of experts.

vramscope's count from the config's shapes (`core.model.shape_count`), which knows
experts, shared experts and MLX quantization. It is not mlxcel's analytical count
(`core.estimate.weights.estimate_params_from_config`), which counts every expert at
`intermediate_size` and so puts Qwen3-30B-A3B at 233 B parameters; that one stays
where mlxcel uses it (its weights fallback), never as the model's size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.model.config import ModelConfig
from core.model.shape_count import count_from_shapes

PARAMS_SOURCE = "vramscope's count from config.json's shapes"


@dataclass(frozen=True)
class ParamCount:
    """Parameters in the checkpoint, and per token for a MoE."""

    total: int
    active: int | None
    """Per token for a mixture of experts; None for a dense model (all are active)."""
    experts: int = 1

    @property
    def billions(self) -> float:
        """Total, in billions (one decimal place is what a person reads)."""
        return self.total / 1e9

    @property
    def active_billions(self) -> float | None:
        """Active per token, in billions (None for a dense model)."""
        return None if self.active is None else self.active / 1e9

    @property
    def words(self) -> str:
        """`30.5 B parameters (3.3 B active, 128 experts)` or `8.0 B parameters`."""
        if self.active is None:
            return f"{self.billions:.1f} B parameters"
        return (
            f"{self.billions:.1f} B parameters ({self.active / 1e9:.1f} B active, "
            f"{self.experts} experts)"
        )

    def json(self) -> dict[str, Any]:
        """vramscope's `params` object."""
        return {
            "total": self.total,
            "active": self.active,
            "experts": self.experts,
            "source": PARAMS_SOURCE,
        }


def param_count(config: ModelConfig | None) -> ParamCount | None:
    """The model's counts, or None where the config has no shapes to count."""
    if config is None:
        return None
    found = count_from_shapes(config)
    if found is None:
        return None
    return ParamCount(found.params, found.active_params, found.experts)
