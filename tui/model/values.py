"""What a control's exact-value box accepts: each field reads text into a value or a reason.

A reading is the value, or a one-line reason why the text is not one; the box
applies only values, and shows the reason where the hint goes. Token counts
and sizes read in `core.value_grammar`, the grammar the CLI flags use (`32k`,
`1.5k`, `128K` with k = 1024; `1G` / `1.5GiB` in the MiB field, binary units); plain
numbers in the in-flight box go through `MLX_ROCM_MAX_INFLIGHT_MB`'s own parser
(the value feeds mlxcel's formula) and the headroom factor through mlxcel's float
rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.answer.solve import CONTEXT_SEARCH_LIMIT
from core.estimate.inflight import MAX_ACCEPTED_INFLIGHT_MB, parse_inflight_mb
from core.numbers import parse_rust_f64, rust_trim
from core.units import MIB
from core.value_grammar import Refused, read_byte_size, read_token_count
from tui.model.scales import ALL_GPU_LAYERS

MAX_BATCH = 4096
MAX_FACTOR = 100.0

Reading = float | str
"""A value (int or float), or why the text is not one."""


def _reading(value: int | Refused) -> Reading:
    return value.reason if isinstance(value, Refused) else value


def read_tokens(text: str) -> Reading:
    """A token count: `8192`, `8,192`, `32k`, `1.5k` (x1024); 0 up to 2^32."""
    if not text.strip():
        return "type a token count, e.g. 8192 or 32k"
    return _reading(read_token_count(text, 0, CONTEXT_SEARCH_LIMIT))


def read_inflight(text: str) -> Reading:
    """MiB: the overlay's own grammar for a number, or a size with M or G (GiB) in it."""
    if not text.strip():
        return "type a budget in MiB, e.g. 1024 or 1G; 0 turns the bound off"
    value: Reading
    if any(c.isalpha() for c in text):
        size = read_byte_size(text)
        value = _reading(size)
        if isinstance(size, int) and size % MIB:
            value = f"'{text.strip()}' is not a whole number of MiB"
        elif isinstance(size, int):
            value = size // MIB
    else:
        parsed = parse_inflight_mb(text)
        value = parsed if parsed is not None else "not a whole number of MiB (e.g. 512, 1G)"
    if isinstance(value, int) and value > MAX_ACCEPTED_INFLIGHT_MB:
        return f"at most {MAX_ACCEPTED_INFLIGHT_MB:,} MiB"
    return value


def read_batch(text: str) -> Reading:
    """Concurrent sequences, 1 to 4096."""
    s = text.strip()
    if not s.isascii() or not s.isdigit():
        return f"a whole number of sequences, 1 to {MAX_BATCH}"
    value = int(s)
    return value if 1 <= value <= MAX_BATCH else f"a batch is 1 to {MAX_BATCH}"


def read_gpu_layers(text: str) -> Reading:
    """llama.cpp's `--n-gpu-layers`: a whole number of layers, or `all` (`-1` too)."""
    s = text.strip().lower()
    if s in ("all", "-1"):
        return ALL_GPU_LAYERS
    if not s.isascii() or not s.isdigit() or int(s) >= ALL_GPU_LAYERS:
        return "a whole number of layers, or all"
    return int(s)


def format_gpu_layers(value: float) -> str:
    """`all`, or the layer count."""
    return "all" if value >= ALL_GPU_LAYERS else str(int(value))


MAX_UBATCH = 65_536
"""The largest `--ubatch-size` the control takes (llama.cpp's own default is 512)."""


def read_ubatch(text: str) -> Reading:
    """llama.cpp's `--ubatch-size`: tokens per physical batch, 1 to `MAX_UBATCH`."""
    s = text.strip()
    if not s.isascii() or not s.isdigit() or not 1 <= int(s) <= MAX_UBATCH:
        return f"a whole number of tokens, 1 to {MAX_UBATCH:,}"
    return int(s)


def read_parallel(text: str) -> Reading:
    """llama.cpp's `--parallel` slots, 1 to 4096."""
    s = text.strip()
    if not s.isascii() or not s.isdigit() or not 1 <= int(s) <= MAX_BATCH:
        return f"a whole number of slots, 1 to {MAX_BATCH}"
    return int(s)


def read_factor(text: str) -> Reading:
    """A headroom factor as mlxcel reads `MLXCEL_HEADROOM_FACTOR`, above 0 and at most 100."""
    value = parse_rust_f64(rust_trim(text))
    if value is None or value != value:
        return "not a number (e.g. 1.2)"
    if not 0.0 < value <= MAX_FACTOR:
        return f"a factor is above 0 and at most {MAX_FACTOR:g}"
    return value


def format_factor(value: float) -> str:
    """`1.20`, or the exact shortest form for a value off the 0.01 grid."""
    return f"{value:.2f}" if round(value, 2) == value else repr(value)


def format_int(value: float) -> str:
    """An integer field's value."""
    return str(int(value))


@dataclass(frozen=True)
class ValueSpec:
    """How one field reads, writes and names its value."""

    read: Callable[[str], Reading]
    fmt: Callable[[float], str]
    unit: str
    """What the value counts, for the parsed-value line (`tokens`, `MiB`, ``)."""

    def parse(self, text: str) -> float | None:
        """The value, or None where the text is not one."""
        reading = self.read(text)
        return None if isinstance(reading, str) else reading

    def shown(self, text: str, value: float) -> str:
        """`= 1,536 tokens` when the text is not already the value as written."""
        plain = f"{value:,}" if isinstance(value, int) else self.fmt(value)
        if text.strip() in (self.fmt(value), plain):
            return ""
        return f"= {plain} {self.unit}".rstrip()


TOKENS = ValueSpec(read_tokens, format_int, "tokens")
INFLIGHT = ValueSpec(read_inflight, format_int, "MiB")
BATCH = ValueSpec(read_batch, format_int, "sequences")
FACTOR = ValueSpec(read_factor, format_factor, "")
GPU_LAYERS = ValueSpec(read_gpu_layers, format_gpu_layers, "layers")
PARALLEL = ValueSpec(read_parallel, format_int, "slots")
UBATCH = ValueSpec(read_ubatch, format_int, "tokens")


def parse_tokens(text: str) -> float | None:
    """`read_tokens` without the reason."""
    return TOKENS.parse(text)


def parse_inflight(text: str) -> float | None:
    """`read_inflight` without the reason."""
    return INFLIGHT.parse(text)


def parse_batch(text: str) -> float | None:
    """`read_batch` without the reason."""
    return BATCH.parse(text)


def parse_factor(text: str) -> float | None:
    """`read_factor` without the reason."""
    return FACTOR.parse(text)
