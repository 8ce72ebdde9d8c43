"""The control panel: every input of the estimate, and the engine `m` measures with.

The panel shows a state it is given (`show`) and reports what the user changed
as one `Changed` message carrying the new `ExplorerState` and the edit that made
it; it never writes the screen's state itself. Each row's exact-value
box reads text through `tui.model.values`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, Static

from core.measurement.engine import ENGINE_CHOICES
from tui.model.scales import BATCH_STOPS, FACTOR_STOPS, INFLIGHT_STOPS, token_stops
from tui.model.split_words import DEVICE_CHOICES, SPLITS
from tui.model.state import BACKEND_ORDER, QUANTIZE_AS, STORED, ExplorerState, with_memory
from tui.model.values import BATCH, FACTOR, INFLIGHT, TOKENS
from tui.model.views import inflight_hint, tokens_hint
from tui.widgets.memory_field import MemoryField
from tui.widgets.segmented import Segmented
from tui.widgets.slider_field import SliderField

BACKENDS = BACKEND_ORDER
KV_MODES = ("fp16", "int8")
QUANTIZE_LABELS = ("as stored", "8-bit", "4-bit")
"""The "Quantize as" options, in `QUANTIZE_AS` order (mlx-lm's affine, group 64)."""

Edit = Callable[[ExplorerState], ExplorerState]
"""One change of the state, as a function: the old state in, the new one out."""

# Slider id -> the state field it shows, and the state with a new value of it.
_FIELDS: dict[str, tuple[str, Callable[[ExplorerState, float], ExplorerState]]] = {
    "tokens": ("max_tokens", lambda s, v: replace(s, max_tokens=int(v))),
    "inflight": ("inflight_mib", lambda s, v: replace(s, inflight_mib=int(v))),
    "batch": ("batch", lambda s, v: replace(s, batch=int(v))),
    "factor": ("headroom_factor", lambda s, v: replace(s, headroom_factor=float(v))),
}


def _per_device_problem(state: ExplorerState) -> str:
    # With two devices or more only: core.parallel.plan comes with the first split.
    from tui.model.parallel_view import per_device_problem

    return per_device_problem(state)


class Controls(Widget):
    """Max tokens, in-flight budget, batch, KV dtype, overhead factor, backend, memory, engine."""

    DEFAULT_CSS = """
    Controls {
        height: auto;
        & > Horizontal { height: 1; }
        & .field-label { width: 16; }
        & #device-memory { width: 1fr; height: 1; }
        & #quantize-hint { width: 1fr; margin-left: 2; color: $text-muted; }
    }
    """

    class Changed(Message):
        """The user changed the state: `state` is the state on the controls with the change,
        `edit` the change itself, for a state that has moved on since (a key, the palette)."""

        def __init__(self, state: ExplorerState, edit: Edit) -> None:
            self.state = state
            self.edit = edit
            super().__init__()

    def __init__(self, state: ExplorerState, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.state = state
        self.border_title = "Controls"

    def compose(self) -> ComposeResult:
        s = self.state
        yield SliderField(
            "Max tokens",
            token_stops(None),
            s.max_tokens,
            spec=TOKENS,
            id="tokens",
            tooltip="Context length (log scale); type an exact count, e.g. 5000, 32k or 1.5k",
        )
        yield SliderField(
            "In-flight MiB",
            INFLIGHT_STOPS,
            s.inflight_mib,
            spec=INFLIGHT,
            page=3,
            id="inflight",
            tooltip="MLX_ROCM_MAX_INFLIGHT_MB: transients ROCm may hold before the host waits",
        )
        yield SliderField("Batch", BATCH_STOPS, s.batch, spec=BATCH, page=3, id="batch")
        with Horizontal():
            yield Label("KV dtype", classes="field-label")
            yield Segmented(KV_MODES, 1 if s.kv_int8 else 0, id="kv")
        with Horizontal(id="quantize-row"):
            yield Label("Quantize as", classes="field-label")
            quantize = Segmented(QUANTIZE_LABELS, QUANTIZE_AS.index(s.quantize_as), id="quantize")
            quantize.tooltip = (
                "vramscope's what-if: the weights mlx_lm.convert -q would write (16/32-bit "
                "float models only); not an mlxcel figure"
            )
            yield quantize
            yield Static("", id="quantize-hint", markup=False)  # a hint, not a label
        yield SliderField(
            "Overhead factor",
            FACTOR_STOPS,
            s.headroom_factor,
            spec=FACTOR,
            id="factor",
            tooltip="MLXCEL_HEADROOM_FACTOR: allocator overhead = (factor - 1) x (weights + KV)",
        )
        with Horizontal():
            yield Label("Backend", classes="field-label")
            yield Segmented([b.label for b in BACKENDS], BACKENDS.index(s.backend), id="backend")
        yield MemoryField(s.memory, id="memory")
        devices_row = Horizontal(id="devices-row")
        devices_row.display = s.devices > 1
        with devices_row:
            yield Label("Devices", classes="field-label")
            yield Segmented(
                [str(n) for n in DEVICE_CHOICES], DEVICE_CHOICES.index(s.devices), id="devices"
            )
            yield Label("  ")
            yield Segmented(["TP", "PP"], SPLITS.index(s.split), id="split")
        memory_row = Horizontal(id="device-memory-row")
        memory_row.display = s.devices > 1
        with memory_row:
            yield Label("Per device", classes="field-label")
            yield Input(
                s.device_memory,
                placeholder="blank: Available on each; or 24GB,16GB",
                compact=True,
                id="device-memory",
                tooltip="Each device's available memory, in rank order (one size: all "
                "devices); blank: the Available value on every device",
            )
        with Horizontal(id="engine-row"):
            yield Label("Measure with", classes="field-label")
            yield Segmented(ENGINE_CHOICES, ENGINE_CHOICES.index(s.engine), id="engine")

    def show(self, state: ExplorerState) -> None:
        """Show `state` in every control (no `Changed`; text being typed stays)."""
        self.state = state
        for field_id, (name, _) in _FIELDS.items():
            self.query_one(f"#{field_id}", SliderField).set_value(getattr(state, name))
        self.query_one("#kv", Segmented).set_index(1 if state.kv_int8 else 0)
        self.query_one("#backend", Segmented).set_index(BACKENDS.index(state.backend))
        self.query_one("#engine", Segmented).set_index(ENGINE_CHOICES.index(state.engine))
        # One device: the row stays out of the way (`d` brings it: 2 devices).
        self.query_one("#devices-row").display = state.devices > 1
        self.query_one("#device-memory-row").display = state.devices > 1
        self.query_one("#devices", Segmented).set_index(DEVICE_CHOICES.index(state.devices))
        self.query_one("#split", Segmented).set_index(SPLITS.index(state.split))
        box = self.query_one("#device-memory", Input)
        if not box.has_focus and box.value != state.device_memory:
            with box.prevent(Input.Changed):
                box.value = state.device_memory
        box.set_class(state.devices > 1 and bool(_per_device_problem(state)), "-invalid")
        self.query_one(MemoryField).set_choice(state.memory)

    def show_hints(self, state: ExplorerState, model_known: bool, trained: int | None) -> None:
        """The lines under the in-flight and token sliders."""
        inflight = self.field("inflight")
        inflight.disabled = not state.backend.has_inflight_reserve
        inflight.set_hint(*inflight_hint(state))
        self.field("tokens").set_hint(*tokens_hint(state, model_known, trained))

    def show_quantize(self, state: ExplorerState, what_ifs: dict[str, int | str]) -> None:
        """Offer "Quantize as" only where a what-if has a number (16/32-bit float weights)."""
        offered = any(isinstance(v, int) for v in what_ifs.values())
        control = self.query_one("#quantize", Segmented)
        control.disabled = not offered
        chosen = state.quantize_as if isinstance(what_ifs.get(state.quantize_as), int) else STORED
        control.set_index(QUANTIZE_AS.index(chosen))
        reasons = {v for v in what_ifs.values() if isinstance(v, str)}
        if not what_ifs:
            hint = ""
        elif not offered:
            hint = "n/a: " + "; ".join(sorted(reasons))
        elif chosen != STORED:
            hint = "vramscope what-if"
        else:
            hint = ""
        self.query_one("#quantize-hint", Static).update(hint)

    def field(self, field_id: str) -> SliderField:
        """A slider row by id (`tokens`, `inflight`, `batch`, `factor`)."""
        return self.query_one(f"#{field_id}", SliderField)

    # The border lights up while focus is inside, as `:focus-within` would do, but as an
    # inline style: Textual restyles every widget under a `:focus-within` rule's node at
    # each focus change (50 here, 20-30 ms at start-up and at every Tab).
    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._light_border()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self._light_border()

    def on_resize(self, event: events.Resize) -> None:
        self._light_border()  # a layout without a border (narrow) must not get one

    def _light_border(self) -> None:
        focused = self.screen.focused
        lit = focused is not None and self in focused.ancestors
        edge, _ = self.styles.base.border_top  # the stylesheet's border, without ours
        if lit and edge not in ("", "none", "hidden"):
            self.styles.border = (edge, self.app.theme_variables.get("accent", "ansi_blue"))
        else:
            self.styles.border = None

    def _post(self, edit: Edit) -> None:
        self.post_message(self.Changed(edit(self.state), edit))

    @on(SliderField.Changed)
    def _slid(self, event: SliderField.Changed) -> None:
        event.stop()
        _, change = _FIELDS[event.field.id or ""]
        value = event.value
        self._post(lambda s: change(s, value))

    @on(Segmented.Changed)
    def _segment(self, event: Segmented.Changed) -> None:
        event.stop()
        i, segment = event.index, event.segmented.id
        if segment == "kv":
            self._post(lambda s: replace(s, kv_int8=i == 1))
        elif segment == "backend":
            backend = BACKENDS[i % len(BACKENDS)]
            self._post(lambda s: replace(s, backend=backend))
        elif segment == "quantize":
            scheme = QUANTIZE_AS[i % len(QUANTIZE_AS)]
            self._post(lambda s: replace(s, quantize_as=scheme))
        elif segment == "engine":
            engine = ENGINE_CHOICES[i % len(ENGINE_CHOICES)]
            self._post(lambda s: replace(s, engine=engine))
        elif segment == "devices":
            devices = DEVICE_CHOICES[i % len(DEVICE_CHOICES)]
            self._post(lambda s: replace(s, devices=devices))
        elif segment == "split":
            split = SPLITS[i % len(SPLITS)]
            self._post(lambda s: replace(s, split=split))

    @on(Input.Changed, "#device-memory")
    def _device_memory(self, event: Input.Changed) -> None:
        event.stop()
        text = event.value
        self._post(lambda s: replace(s, device_memory=text))

    @on(MemoryField.Changed)
    def _memory(self, event: MemoryField.Changed) -> None:
        event.stop()
        choice = event.choice
        self._post(lambda s: with_memory(s, choice))
