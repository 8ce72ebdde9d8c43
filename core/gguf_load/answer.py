"""One question about a GGUF model under llama.cpp, answered (#40): the load at the
context asked, its verdict against the available memory, the largest context, the
largest `--n-gpu-layers` that fits when the whole model does not, and the
`llama-server` command line that asks llama.cpp the same question.

Arithmetic on a `LlamaCppPlan` (`core.load.llama_cpp`) and an available-memory figure;
no I/O. `inspect` and `fit` both answer through `answer_gguf`, so a `fit` row is
`inspect`'s answer to the byte.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace

from core.answer.verdict import Scope, Verdict
from core.load.llama_cpp import FlashAttn, LlamaCppPlan, largest_context, largest_gpu_layers
from core.load.load import EngineLoad

CONTEXT_CEILING = 1 << 24
"""The largest `--ctx-size` the context search tries (16,777,216 tokens): a load that
still fits there (every layer sliding-window or recurrent) is "unbounded"."""
FALLBACK_CTX = 4096
"""The context asked of a GGUF without `<arch>.context_length` (llama.cpp's old default)."""


@dataclass(frozen=True)
class CtxSize:
    """The `--ctx-size` asked, and where it came from."""

    tokens: int
    source: str
    """`--max-tokens`, or llama.cpp's default: the trained context (`llama.context_length`)."""


def ctx_size(asked: int | None, plan: LlamaCppPlan, arch: str) -> CtxSize:
    """llama.cpp's `--ctx-size`: the tokens asked, or (none, or 0, as llama.cpp reads 0)
    the context the model was trained with (`common.h`: `n_ctx = 0`, "0 = loaded from
    model")."""
    if asked:
        return CtxSize(asked, "--max-tokens (llama.cpp's --ctx-size)")
    if plan.hparams.n_ctx_train < 1:
        return CtxSize(
            FALLBACK_CTX, f"{FALLBACK_CTX:,}: the GGUF has no {arch}.context_length to default to"
        )
    return CtxSize(
        plan.hparams.n_ctx_train,
        f"llama.cpp's default: the trained context ({arch}.context_length)",
    )


@dataclass(frozen=True)
class GgufContext:
    """The largest `--ctx-size` whose load fits, at most the trained context."""

    memory_tokens: int | None
    """What memory alone allows; None when not even one token fits (or memory unread)."""
    memory_unbounded: bool
    """The load still fits at `CONTEXT_CEILING` tokens."""
    trained_tokens: int
    """The trained context; 0 when the GGUF does not say (nothing caps the answer)."""
    trained_source: str
    unread: str | None = None

    @property
    def capped(self) -> bool:
        """Memory would hold more than the model was trained for."""
        return (
            self.trained_tokens > 0
            and self.memory_tokens is not None
            and self.memory_tokens > self.trained_tokens
        )

    @property
    def tokens(self) -> int | None:
        """The largest context to use: memory's bound, at most the trained context."""
        if self.memory_tokens is None or self.unread is not None:
            return None
        return self.trained_tokens if self.capped else self.memory_tokens

    @property
    def words(self) -> str:
        if self.unread is not None:
            return f"not answered: available memory was not read ({self.unread})"
        if self.memory_tokens is None:
            return "none: the model does not fit even with a 1-token context"
        if self.capped:
            room = "any" if self.memory_unbounded else f"{self.memory_tokens:,}"
            return (
                f"{self.trained_tokens:,} tokens, the trained context ({self.trained_source}; "
                f"memory allows {room})"
            )
        if self.memory_unbounded:
            return f"any (still fits at {self.memory_tokens:,} tokens)"
        trained = f"{self.trained_tokens:,}" if self.trained_tokens else "unknown"
        return f"{self.memory_tokens:,} tokens (trained: {trained})"

    def json(self) -> dict[str, object]:
        """The `largest_context` object, under the mlx-lm load's key names."""
        return {
            "tokens": self.tokens,
            "unbounded": self.memory_unbounded and not self.capped,
            "memory_tokens": self.memory_tokens,
            "memory_unbounded": self.memory_unbounded,
            "capped_by_trained_context": self.capped,
            "trained_tokens": self.trained_tokens or None,
            "trained_source": self.trained_source,
            "rope_scaling": None,
            "unread_memory": self.unread,
        }


@dataclass(frozen=True)
class GgufAnswer:
    """The load at the asked context and what the available memory makes of it."""

    plan: LlamaCppPlan
    ctx: CtxSize
    load: EngineLoad
    available_bytes: int
    unread: str | None
    """Why the available memory was never read: then there is no verdict."""
    context: GgufContext
    gpu_layers: int | None
    """The largest `--n-gpu-layers` whose device share fits at the asked context, when
    the layers asked do not fit (0: not even the output layer); None when they fit or
    memory was never read."""
    command: str
    """`llama-server ...` with the question's flags."""
    fitting_command: str | None
    """The same with `-ngl` the largest that fits, when the layers asked do not."""

    @property
    def held_bytes(self) -> int:
        """What the available memory is held against: the device's share when any layer
        is offloaded, the whole load when llama.cpp runs on the host alone."""
        return self.load.device_bytes if self.plan.offloaded_layers else self.load.total_bytes

    @property
    def fits(self) -> bool | None:
        """The verdict; None when the available memory was never read."""
        if self.unread is not None:
            return None
        return self.held_bytes <= self.available_bytes

    @property
    def verdict(self) -> Verdict:
        """The verdict as a value: the held bytes against the available memory (no
        verdict when it was never read), worded by `core.answer.verdict`."""
        if self.unread is not None:
            return Verdict(Scope.LOAD, None)
        return Verdict.of_total(self.held_bytes, self.available_bytes, Scope.LOAD)

    @property
    def layer_count(self) -> int:
        """llama.cpp's offloadable layers: the repeating ones and the output layer."""
        return self.plan.hparams.n_layer + 1


def _trained_source(arch: str) -> str:
    return f"{arch}.context_length"


def answer_gguf(
    plan: LlamaCppPlan,
    ctx: CtxSize,
    available_bytes: int,
    unread: str | None,
    model_arg: str,
    *,
    hub: bool,
    projector: str | None,
    arch: str,
    context: GgufContext | None = None,
) -> GgufAnswer:
    """The answer for `plan` at `ctx` against `available_bytes` (`unread`: why it was
    never read). `model_arg` is the file (`-m`) or, with `hub`, `REPO:QUANT` (`-hf`).
    `context`: the largest context already found for this plan and memory (it does not
    depend on `ctx`; the explorer's token slider asks again and again)."""
    load = plan.at(ctx.tokens)
    trained = plan.hparams.n_ctx_train
    if context is None and unread is not None:
        context = GgufContext(None, False, trained, _trained_source(arch), unread)
    elif context is None:
        best = largest_context(plan, available_bytes, CONTEXT_CEILING)
        unbounded = best == CONTEXT_CEILING
        context = GgufContext(best, unbounded, trained, _trained_source(arch))
    command = llama_server_command(plan, ctx.tokens, model_arg, hub=hub, projector=projector)
    answer = GgufAnswer(plan, ctx, load, available_bytes, unread, context, None, command, None)
    if answer.fits is False:
        layers = largest_gpu_layers(plan, ctx.tokens, available_bytes)
        answer = replace(answer, gpu_layers=layers)
        if 0 < layers < plan.offloaded_layers:
            fitting = plan.with_options(replace(plan.options, n_gpu_layers=layers))
            command = llama_server_command(
                fitting, ctx.tokens, model_arg, hub=hub, projector=projector
            )
            answer = replace(answer, fitting_command=command)
    return answer


def llama_server_command(
    plan: LlamaCppPlan, tokens: int, model_arg: str, *, hub: bool, projector: str | None
) -> str:
    """The `llama-server` line for the question, every flag that changes the memory
    spelled out (llama-server's own defaults differ: `-np` auto is 4 slots unified)."""
    o = plan.options
    words = ["llama-server", "-hf" if hub else "-m", model_arg]
    if projector is not None and not hub:
        words += ["--mmproj", projector]
    words += ["-c", str(tokens), "-ngl", str(plan.offloaded_layers)]
    words += ["-ctk", o.cache_type_k.value, "-ctv", o.cache_type_v.value]
    words += ["-np", str(o.parallel), "-ub", str(o.ubatch_size)]
    if o.batch_size != 2048:
        words += ["-b", str(o.batch_size)]
    words += ["-fa", "on" if o.flash_attn is FlashAttn.ON else "off"]
    if o.kv_unified:
        words.append("--kv-unified")
    if not o.kv_offload:
        words.append("--no-kv-offload")
    if o.swa_full:
        words.append("--swa-full")
    return shlex.join(words)
