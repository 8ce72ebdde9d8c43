"""What `m` measures: the model on screen at the context on screen, with the slider's budget.

Pure: the explorer's state and catalog entry in, a `MeasureRequest` out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core.catalog.entry import ORIGIN_HUB, CatalogEntry
from core.measurement.engine import Engine
from core.measurement.request import DEFAULT_GEN_TOKENS, MeasureRequest
from tui.model.state import ExplorerState

MIN_CONTEXT = 2
"""One prompt token and one decode token."""


def split_context(max_tokens: int) -> tuple[int, int]:
    """P and G for the context on screen: G = 128 decode tokens and P = context - G.

    The estimate beside the peak is taken at P + G, so P + G is the context on
    screen. A context under 256 tokens is split in half (G = context // 2), and
    anything under 2 tokens is measured at 2.
    """
    context = max(max_tokens, MIN_CONTEXT)
    gen = min(DEFAULT_GEN_TOKENS, context // 2)
    return context - gen, gen


def measure_target(entry: CatalogEntry | None, model: str) -> str:
    """The model as the catalog resolved it: its folder, else its built-in profile id.

    Naming the folder (or profile) the explorer read means the launcher measures
    exactly the model on screen, never another one of the same name.
    """
    if entry is not None and entry.path is not None:
        return str(entry.path)
    if entry is not None and entry.profile_id is not None:
        return entry.profile_id
    return model


def command_model(entry: CatalogEntry | None, model: str) -> tuple[str, str | None]:
    """The model `M`'s suggested command names, and the line that says why when it is not
    the folder on screen: a model read from the Hub is kept as its headers only, which
    no engine can load, so the command names the repo id and mlx_lm downloads it."""
    if entry is not None and entry.origin == ORIGIN_HUB:
        return entry.name, (
            f"{entry.name} is read from the Hub (vramscope keeps its config and headers "
            "only): the command names the repo id, and mlx_lm downloads the weights itself."
        )
    return measure_target(entry, model), None


def measure_request(
    state: ExplorerState, entry: CatalogEntry | None, models_dirs: Sequence[Path] = ()
) -> MeasureRequest:
    """The bench workload at the state's context, budget and estimate knobs, device auto.

    The in-flight budget is the slider's whatever the backend on screen: the engine
    applies ROCm's bound on every device. KV dtype int8 is measured by an engine that
    measures it (the mlx engine: mlx-lm's 8-bit cache); the torch engine runs 16-bit K/V
    only.
    """
    prompt, gen = split_context(state.max_tokens)
    return MeasureRequest(
        model=measure_target(entry, state.model),
        prompt_tokens=prompt,
        gen_tokens=gen,
        inflight=state.inflight_mib,
        device="auto",
        models_dirs=tuple(str(d) for d in models_dirs),
        headroom_factor=state.headroom_factor,
        activation_mult=state.activation_mult,
        engine=state.engine,
        kv_int8=state.kv_int8 and Engine.named(state.engine).spec.int8_kv,
    )


def model_names(state: ExplorerState, entry: CatalogEntry | None, display: str | None) -> set[str]:
    """Every name a measurement of the model on screen may carry (as typed, as resolved)."""
    names = {state.model, measure_target(entry, state.model)}
    if display:
        names.add(display)
    return names
