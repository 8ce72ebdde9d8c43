"""Which quantization a figure is for: the model as stored, or an mlx-lm what-if.

A kind of its own (never a string compare): `fit`'s `--quantizations` words, the
explorer's "Quantize as" control and a fit row all take one. Light to import (the
explorer's first frame has it); the what-if rule itself is `core.answer.quantize`'s.
"""

from __future__ import annotations

from core.kind import Kind


class Quantization(Kind):
    """As stored (mlxcel's estimate), or as `mlx_lm.convert -q` would write it."""

    STORED = "stored"
    MLX_8BIT = "mlx-8bit"
    MLX_4BIT = "mlx-4bit"

    @property
    def word(self) -> str:
        """The `--quantizations` word and the JSON value: `stored`, `mlx-8bit`, `mlx-4bit`."""
        return self.value

    @property
    def is_what_if(self) -> bool:
        """True for vramscope's what-ifs (not mlxcel's estimate of the files as they are)."""
        return self is not Quantization.STORED

    @property
    def bits(self) -> int | None:
        """Bits per weight of a what-if (None: as stored, whatever the files hold)."""
        return _BITS.get(self)


_BITS = {Quantization.MLX_8BIT: 8, Quantization.MLX_4BIT: 4}
WHAT_IFS: tuple[Quantization, ...] = (Quantization.MLX_8BIT, Quantization.MLX_4BIT)
