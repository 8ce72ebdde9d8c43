"""llama.cpp's question from the explorer's state, and its answer, kept per question.

The controls edit `ExplorerState`; a GGUF on screen turns the state's llama.cpp fields
and token count into `LlamaCppOptions` and `--ctx-size`, and `core.gguf_load.answer`
answers them exactly as `inspect FILE.gguf` does with the same flags. The plan and the
answer are kept per question, so a key that comes back to a question already asked (a
slider moved back and forth) repaints from memory; nothing here reads the file again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING

from core.errors import VramscopeError
from tui.model.scales import ALL_GPU_LAYERS

if TYPE_CHECKING:
    from core.catalog.gguf_source import GgufSource
    from core.estimate.available import AvailableMemory
    from core.gguf_load.answer import GgufAnswer, GgufContext
    from core.gguf_load.fit import GgufAsk
    from core.load.llama_cpp import LlamaCppOptions, LlamaCppPlan
    from tui.model.state import ExplorerState

KEPT = 256
"""Answers kept per model (a slider swept end to end asks about a hundred)."""


def llama_options(state: ExplorerState) -> LlamaCppOptions:
    """llama.cpp's flags from the state (`inspect`'s default for the rest: `-b 2048`).
    Raises UsageError as llama.cpp refuses (a quantized V
    cache without flash attention)."""
    from core.load.llama_cpp import LlamaCppOptions

    layers = -1 if state.gpu_layers >= ALL_GPU_LAYERS else state.gpu_layers
    default = LlamaCppOptions()
    return LlamaCppOptions(
        n_gpu_layers=layers,
        cache_type_k=state.cache_type_k,
        cache_type_v=state.cache_type_v,
        parallel=state.parallel,
        flash_attn=state.flash_attn,
        ubatch_size=state.ubatch_size,
        # llama.cpp's n_batch is at least n_ubatch (as `inspect --ubatch-size` sets it)
        batch_size=max(state.ubatch_size, default.batch_size),
        kv_unified=state.kv_unified,
        kv_offload=state.kv_offload,
        swa_full=state.swa_full,
    )


@dataclass(frozen=True)
class GgufOnScreen:
    """A GGUF model read for the explorer, and how llama.cpp is told to load it."""

    name: str
    """The model as typed or picked (a file, a folder, `REPO:QUANT`)."""
    source: GgufSource
    hub: bool
    """Read from the Hub (`-hf REPO:QUANT` on the llama-server line), not a local file."""

    @property
    def model_arg(self) -> str:
        """llama.cpp's `-m PATH` (the file the pick chose), or `-hf`'s `REPO:QUANT`."""
        return self.name if self.hub else self.source.model.first.path

    @property
    def shown_name(self) -> str:
        """The model for people: `REPO:QUANT`, or the GGUF file's own name."""
        return self.name if self.hub else PurePath(self.source.model.first.path).name

    @property
    def projector(self) -> str | None:
        """The `mmproj` file beside a local model (`--mmproj`)."""
        found = self.source.model.projector
        return found.path if found is not None and not self.hub else None

    @property
    def layer_count(self) -> int | None:
        """llama.cpp's offloadable layers (`n_layer + 1`), where the architecture says."""
        blocks = self.source.model.arch_int("block_count")
        return blocks + 1 if blocks is not None and blocks >= 0 else None

    @property
    def trained_context(self) -> int | None:
        """`<arch>.context_length`: the token slider's top."""
        return self.source.model.context_length


@dataclass
class GgufAnswers:
    """The answers for one model, by question (options, tokens, available memory)."""

    model: GgufOnScreen
    _plans: dict[LlamaCppOptions, LlamaCppPlan | str] = field(default_factory=dict)
    _answers: dict[tuple[object, ...], GgufAnswer | str] = field(default_factory=dict)
    _contexts: dict[tuple[object, ...], GgufContext] = field(default_factory=dict)
    """The largest context by (options, memory): the token slider moves without it."""

    def answer(self, state: ExplorerState, available: AvailableMemory) -> GgufAnswer | str:
        """The answer to the state's question, or the one line why there is none."""
        try:
            options = llama_options(state)
        except VramscopeError as exc:
            return str(exc)
        key = (options, state.max_tokens, available.bytes, available.unread)
        found = self._answers.get(key)
        if found is None:
            found = self._ask(options, state.max_tokens, available)
            if len(self._answers) >= KEPT:
                self._answers.clear()
            self._answers[key] = found
        return found

    def _plan(self, options: LlamaCppOptions) -> LlamaCppPlan | str:
        from core.load.llama_cpp import plan_for_model

        found = self._plans.get(options)
        if found is None:
            try:
                found = plan_for_model(self.model.source.model, options)
            except VramscopeError as exc:  # an architecture the plan cannot size
                found = str(exc)
            if len(self._plans) >= KEPT:
                self._plans.clear()
            self._plans[options] = found
        return found

    def _ask(
        self, options: LlamaCppOptions, tokens: int, available: AvailableMemory
    ) -> GgufAnswer | str:
        from core.gguf_load.answer import answer_gguf, ctx_size

        plan = self._plan(options)
        if isinstance(plan, str):
            return plan
        model = self.model
        arch = model.source.model.architecture
        memory = (options, available.bytes, available.unread)
        try:
            found = answer_gguf(
                plan,
                ctx_size(tokens, plan, arch),
                available.bytes,
                available.unread,
                model.model_arg,
                hub=model.hub,
                projector=model.projector,
                arch=arch,
                context=self._contexts.get(memory),
            )
        except VramscopeError as exc:
            return str(exc)
        if len(self._contexts) >= KEPT:
            self._contexts.clear()
        self._contexts[memory] = found.context
        return found


def gguf_ask(state: ExplorerState, available: AvailableMemory) -> GgufAsk | None:
    """The question the Fits view's GGUF rows answer: the explorer's llama.cpp controls
    and tokens against its available memory (None while llama.cpp would refuse them)."""
    from core.gguf_load.fit import GgufAsk

    try:
        options = llama_options(state)
    except VramscopeError:
        return None
    return GgufAsk(options, state.max_tokens, available.bytes, available.unread)
