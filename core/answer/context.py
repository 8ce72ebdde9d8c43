"""The largest context: what memory allows, capped at what the model was trained for.

The memory bound is an exact search over mlxcel's estimate (`core.answer.solve`): at
the bound the verdict is FITS, one token more it is not. A model trained for 4,096
tokens is not served at 35,840 because memory would hold them, so the answer is the
smaller of the two, with the reason. The trained context is the config's
`max_position_embeddings` (or the family's default where configs leave it out), and
a `rope_scaling` block that stretches an original window past it (a YaRN factor
added to Qwen's config) extends it; either way the scaling is noted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.answer.solve import FitLimit
from core.model.config import ModelConfig, as_f64, as_u64

# Display-only context defaults for families whose configs leave the field out
# (Gemma 3's sparse `text_config`: `Gemma3TextConfig.max_position_embeddings`).
FAMILY_CONTEXT_DEFAULTS = {"gemma3": 131072}


@dataclass(frozen=True)
class TrainedContext:
    """The context the model was trained for (or stretched to by its rope scaling)."""

    tokens: int
    source: str
    """Where it was read: `max_position_embeddings`, `gemma3's default`, `rope_scaling`."""
    rope: str = ""
    """The rope scaling in words (`llama3 x8 from 8,192`), "" without one."""

    @property
    def words(self) -> str:
        """`32,768 tokens (max_position_embeddings; rope yarn x4 from 32,768)`."""
        notes = "; ".join(n for n in (self.source, f"rope {self.rope}" if self.rope else "") if n)
        return f"{self.tokens:,} tokens ({notes})"


def _rope(block: Mapping[str, Any]) -> tuple[str, float | None, int | None]:
    kind = block.get("rope_type", block.get("type"))
    factor = as_f64(block.get("factor"))
    original = as_u64(block.get("original_max_position_embeddings"))
    return (str(kind) if isinstance(kind, str) else "scaling"), factor, original


def trained_context(config: ModelConfig | None) -> TrainedContext | None:
    """What the config says the model was trained for; None where it does not say."""
    if config is None:
        return None
    found = config.max_position_embeddings()
    source = "max_position_embeddings"
    if found is None and config.family in FAMILY_CONTEXT_DEFAULTS:
        found, source = FAMILY_CONTEXT_DEFAULTS[config.family], f"{config.family}'s default"
    block = next(
        (
            b
            for b in (config.text.get("rope_scaling"), config.root.get("rope_scaling"))
            if isinstance(b, Mapping)
        ),
        None,
    )
    rope = ""
    if block is not None:
        kind, factor, original = _rope(block)
        if factor is not None and factor > 1:
            rope = f"{kind} x{factor:g}" + (f" from {original:,}" if original else "")
            stretched = int(original * factor) if original else None
            if stretched is not None and (found is None or stretched > found):
                found, source = stretched, "rope_scaling's original x factor"
    if found is None or found == 0:
        return None
    return TrainedContext(found, source, rope)


@dataclass(frozen=True)
class ContextAnswer:
    """The largest context that fits, and whether the trained context caps it."""

    memory: FitLimit
    """What memory alone allows (mlxcel's estimate searched token by token)."""
    trained: TrainedContext | None
    unread: str | None = None
    """Why the available memory was never read (`AvailableMemory.unread`): then there is
    no largest context to claim, only mlxcel's fallback of 0 bytes."""

    @property
    def capped(self) -> bool:
        """True when memory would hold more than the model was trained for."""
        value = self.memory.value
        return self.trained is not None and value is not None and value > self.trained.tokens

    @property
    def tokens(self) -> int | None:
        """The largest context to use: memory's bound, at most the trained context; None
        when even an empty context does not fit, or memory was never read."""
        value = self.memory.value
        if value is None or self.unread is not None:
            return None
        return self.trained.tokens if self.capped and self.trained else value

    @property
    def unbounded(self) -> bool:
        """Memory never runs out (the KV cache stops growing) and nothing caps it."""
        return self.memory.unbounded and not self.capped

    def past_trained(self, tokens: int) -> bool:
        """True when `tokens` is more than the model was trained for."""
        return self.trained is not None and tokens > self.trained.tokens

    @property
    def words(self) -> str:
        """`Largest context that fits` in words."""
        if self.unread is not None:
            return f"not answered: available memory was not read ({self.unread})"
        value = self.memory.value
        if value is None or value == 0:
            return "none: the model does not fit even with an empty context"
        if self.capped and self.trained is not None:
            room = "any" if self.memory.unbounded else f"{value:,}"
            return (
                f"{self.trained.tokens:,} tokens, the trained context "
                f"({self._trained_notes()}; memory allows {room})"
            )
        if self.memory.unbounded:
            return f"any (still fits at {value:,} tokens: the KV cache stops growing)"
        text = f"{value:,} tokens"
        if self.trained is not None:
            text += f" (trained: {self.trained.tokens:,})"
        return text

    def _trained_notes(self) -> str:
        t = self.trained
        assert t is not None
        return "; ".join(n for n in (t.source, f"rope {t.rope}" if t.rope else "") if n)

    def json(self) -> dict[str, Any]:
        """vramscope's `largest_context` object (beside mlxcel's keys)."""
        t = self.trained
        return {
            "tokens": self.tokens,
            "unbounded": self.unbounded,
            "memory_tokens": self.memory.value,
            "memory_unbounded": self.memory.unbounded,
            "capped_by_trained_context": self.capped,
            "trained_tokens": t.tokens if t else None,
            "trained_source": t.source if t else None,
            "rope_scaling": (t.rope or None) if t else None,
            "unread_memory": self.unread,
        }


def past_trained_words(tokens: int, trained: TrainedContext) -> str:
    """`32,768 tokens is past the trained context (4,096 tokens, max_position_embeddings)`."""
    return f"{tokens:,} tokens is past the trained context ({trained.words})"
