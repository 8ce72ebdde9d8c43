"""The largest context: what memory allows, capped at what the model was trained for.

The memory bound is an exact search over mlxcel's estimate (`core.answer.solve`): at
the bound the verdict is FITS, one token more it is not. A model trained for 4,096
tokens is not served at 35,840 because memory would hold them, so the answer is the
smaller of the two, with the reason. The trained context is read rope type
by rope type (`core.model.trained_context`): `max_position_embeddings` (or the
family's default where configs leave it out), stretched only by a YaRN block over the
original window (Qwen's); the scaling and what it did are noted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.answer.solve import FitLimit
from core.model.trained_context import TrainedContext, trained_context

__all__ = ["ContextAnswer", "TrainedContext", "past_trained_words", "trained_context"]


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
                f"({self.trained.notes}; memory allows {room})"
            )
        if self.memory.unbounded:
            return f"any (still fits at {value:,} tokens: the KV cache stops growing)"
        text = f"{value:,} tokens"
        if self.trained is not None:
            text += f" (trained: {self.trained.tokens:,})"
        return text

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
