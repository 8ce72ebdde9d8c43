"""MLX affine quantization of a model: the one `QuantScheme`.

A model's `quantization` block in config.json (mlx-lm writes it: defaults plus
per-module overrides, `false` for a module left in float) and the what-if of
`mlx_lm.convert -q` (`core.answer.quantize`: one default, no overrides) are the same
thing: bits per weight in groups, module by module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_GROUP_SIZE = 64
"""mlx-lm's `--q-group-size` default."""


@dataclass(frozen=True)
class QuantParams:
    """MLX affine quantization of one module: `bits` per weight in groups of `group_size`."""

    bits: int
    group_size: int = DEFAULT_GROUP_SIZE


@dataclass(frozen=True)
class QuantScheme:
    """Defaults plus per-module overrides (module path -> params, None: left in float)."""

    default: QuantParams
    overrides: Mapping[str, QuantParams | None] = field(default_factory=dict)

    def params_for(self, module_path: str) -> QuantParams | None:
        """How `module_path` is quantized (None: left in float, as `false` says)."""
        if module_path in self.overrides:
            return self.overrides[module_path]
        return self.default
