"""llama.cpp's cache types and flash-attention setting, as its flags name them (#40).

Apart from `core.load.llama_cpp` so that what shows or holds a choice of them (the
explorer's state, its controls) imports two enums and not the plan: the explorer's
first frame reads no GGUF.
"""

from __future__ import annotations

from enum import Enum

from core.errors import UsageError


class KvCacheType(Enum):
    """The types `--cache-type-k` and `--cache-type-v` accept, as llama.cpp names them."""

    F32 = "f32"
    F16 = "f16"
    BF16 = "bf16"
    Q8_0 = "q8_0"
    Q4_0 = "q4_0"
    Q4_1 = "q4_1"
    IQ4_NL = "iq4_nl"
    Q5_0 = "q5_0"
    Q5_1 = "q5_1"

    @property
    def block(self) -> tuple[int, int]:
        """ggml's (values per block, bytes per block) for the type (`ggml.c`'s type traits)."""
        return _BLOCKS[self]

    @property
    def is_quantized(self) -> bool:
        return self.block[0] > 1

    def row_bytes(self, values: int) -> int:
        """`ggml_row_size`: the bytes of `values` values of this type."""
        per, size = self.block
        return values // per * size

    @classmethod
    def named(cls, flag: str, text: str) -> KvCacheType:
        for member in cls:
            if text.strip().lower() == member.value:
                return member
        choices = ", ".join(m.value for m in cls)
        raise UsageError(flag, f"unknown cache type {text!r} (choose {choices})")


_BLOCKS = {
    KvCacheType.F32: (1, 4),
    KvCacheType.F16: (1, 2),
    KvCacheType.BF16: (1, 2),
    KvCacheType.Q8_0: (32, 34),
    KvCacheType.Q4_0: (32, 18),
    KvCacheType.Q4_1: (32, 20),
    KvCacheType.IQ4_NL: (32, 18),
    KvCacheType.Q5_0: (32, 22),
    KvCacheType.Q5_1: (32, 24),
}


class FlashAttn(Enum):
    """`--flash-attn on|off` (llama.cpp's `auto` turns it on where the device supports it)."""

    ON = "on"
    OFF = "off"
