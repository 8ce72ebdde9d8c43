"""The control panel: every input of the estimate, in the order the issue lists them.

Each exact-value box takes the same grammar the command line does: the
in-flight box goes through `MLX_ROCM_MAX_INFLIGHT_MB`'s own parser, the
headroom factor through mlxcel's float rules, and token counts accept `32k`.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Label

from core.backend import Backend
from core.backend_inflight import parse_inflight_mb
from core.numbers import parse_rust_f64, rust_trim
from core.solve import CONTEXT_SEARCH_LIMIT
from tui.scales import BATCH_STOPS, FACTOR_STOPS, INFLIGHT_STOPS, token_stops
from tui.state import ExplorerState
from tui.widgets.memory_field import MemoryField
from tui.widgets.segmented import Segmented
from tui.widgets.slider_field import SliderField

BACKENDS: tuple[Backend, ...] = (Backend.ROCM, Backend.CUDA, Backend.METAL, Backend.CPU)
KV_MODES = ("fp16", "int8")
MAX_BATCH = 4096
MAX_FACTOR = 100.0


def parse_tokens(text: str) -> int | None:
    """A token count: `8192`, `8,192`, `32k` (x1024); 0 up to 2^32."""
    s = text.strip().replace(",", "").replace("_", "").lower()
    scale = 1
    if s.endswith("k"):
        s, scale = s[:-1], 1024
    if not s.isascii() or not s.isdigit():
        return None
    value = int(s) * scale
    return value if value <= CONTEXT_SEARCH_LIMIT else None


def parse_inflight(text: str) -> int | None:
    """MiB through the overlay's own parser; an empty box is not a value yet."""
    if not text.strip():
        return None
    return parse_inflight_mb(text)


def parse_batch(text: str) -> int | None:
    """Concurrent sequences, 1 to 4096."""
    s = text.strip()
    if not s.isascii() or not s.isdigit():
        return None
    value = int(s)
    return value if 1 <= value <= MAX_BATCH else None


def parse_factor(text: str) -> float | None:
    """A headroom factor as mlxcel reads `MLXCEL_HEADROOM_FACTOR`: finite and positive."""
    value = parse_rust_f64(rust_trim(text))
    if value is None or not 0.0 < value <= MAX_FACTOR:
        return None
    return value


def format_factor(value: float) -> str:
    """`1.20`, or the exact shortest form for a value off the 0.01 grid."""
    return f"{value:.2f}" if round(value, 2) == value else repr(value)


def format_int(value: float) -> str:
    """An integer field's value."""
    return str(int(value))


class Controls(Widget):
    """Max tokens, in-flight budget, batch, KV dtype, headroom, backend, available memory."""

    DEFAULT_CSS = """
    Controls {
        height: auto;
        & > Horizontal { height: 1; }
        & .field-label { width: 14; }
    }
    """

    def __init__(self, state: ExplorerState, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.state = state

    def compose(self) -> ComposeResult:
        s = self.state
        yield SliderField(
            "Max tokens",
            token_stops(None),
            s.max_tokens,
            parse=parse_tokens,
            fmt=format_int,
            id="tokens",
            tooltip="Context length (log scale); type an exact count, e.g. 5000 or 32k",
        )
        yield SliderField(
            "In-flight MiB",
            INFLIGHT_STOPS,
            s.inflight_mib,
            parse=parse_inflight,
            fmt=format_int,
            page=3,
            id="inflight",
            tooltip="MLX_ROCM_MAX_INFLIGHT_MB: transients ROCm may hold before the host waits",
        )
        yield SliderField(
            "Batch", BATCH_STOPS, s.batch, parse=parse_batch, fmt=format_int, page=3, id="batch"
        )
        with Horizontal():
            yield Label("KV dtype", classes="field-label")
            yield Segmented(KV_MODES, 1 if s.kv_int8 else 0, id="kv")
        yield SliderField(
            "Headroom",
            FACTOR_STOPS,
            s.headroom_factor,
            parse=parse_factor,
            fmt=format_factor,
            id="factor",
            tooltip="MLXCEL_HEADROOM_FACTOR: allocator overhead = (factor - 1) x (weights + KV)",
        )
        with Horizontal():
            yield Label("Backend", classes="field-label")
            yield Segmented([b.label for b in BACKENDS], BACKENDS.index(s.backend), id="backend")
        yield MemoryField(s.memory, id="memory")
