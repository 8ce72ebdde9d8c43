"""The context a model was trained for, read from its config, rope type by rope type.

A `rope_scaling` block means different things for different rope types (the rules
transformers' `modeling_rope_utils` applies, and the model cards follow):

- `llama3`, `linear`, `longrope` (`su`): `max_position_embeddings` is already the
  extended window. Llama-3.2 writes `original_max_position_embeddings` 8,192 and
  factor 32 beside `max_position_embeddings` 131,072: it was trained for 131,072,
  not 262,144.
- `yarn`: the block stretches the original window by its factor. Where
  `max_position_embeddings` is that original window (Qwen's model cards add the block
  to a 32,768 config), the model serves original x factor; where it is already
  larger (DeepSeek-V2 writes 163,840 beside an original 4,096), it is the window.
- `dynamic`: NTK scaling at run time past the trained window; not stretched.
- any other type: not stretched, and said so.

Where a config leaves `max_position_embeddings` out, the family's config class
default is the window the model is built for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.display_text import clean_text
from core.model.config import ModelConfig, as_f64, as_u64

# Context defaults for families whose configs leave the field out: transformers'
# config class holds them (Gemma 3's sparse `text_config`: `Gemma3TextConfig`'s
# `max_position_embeddings=131_072`; mlx-lm's `gemma3_text.ModelArgs` says 32,768,
# but it only sizes no cache by it).
FAMILY_CONTEXT_DEFAULTS = {"gemma3": 131072}

# Rope types whose `max_position_embeddings` already is the extended window.
_ALREADY_EXTENDED = frozenset({"llama3", "linear", "longrope", "su"})

# A stretched window past this is no window (a factor of 1e300 in remote data).
_TOKENS_CAP = 2**40


@dataclass(frozen=True)
class TrainedContext:
    """The context the model was trained for (or stretched to by its rope scaling)."""

    tokens: int
    source: str
    """Where it was read: `max_position_embeddings`, `gemma3's default`,
    `yarn's original window x factor`."""
    rope: str = ""
    """The rope scaling in words with what it did to the figure (`llama3 x8 from
    8,192, already in the window`), "" without one."""

    @property
    def notes(self) -> str:
        """`yarn's original window x factor; rope yarn x4 from 32,768`."""
        return "; ".join(n for n in (self.source, f"rope {self.rope}" if self.rope else "") if n)

    @property
    def words(self) -> str:
        """`131,072 tokens (max_position_embeddings; rope llama3 x8 from 8,192, already in
        the window)`."""
        return f"{self.tokens:,} tokens ({self.notes})"


def _rope_block(config: ModelConfig) -> Mapping[str, Any] | None:
    for block in (config.text.get("rope_scaling"), config.root.get("rope_scaling")):
        if isinstance(block, Mapping):
            return block
    return None


def trained_context(config: ModelConfig | None) -> TrainedContext | None:
    """What the config says the model was trained for; None where it does not say."""
    if config is None:
        return None
    found = config.max_position_embeddings() or None
    source = "max_position_embeddings"
    if found is None and config.family in FAMILY_CONTEXT_DEFAULTS:
        found, source = FAMILY_CONTEXT_DEFAULTS[config.family], f"{config.family}'s default"
    block = _rope_block(config)
    factor = as_f64(block.get("factor")) if block is not None else None
    if block is None or factor is None or factor <= 1:
        return TrainedContext(found, source) if found else None
    kind_value = block.get("rope_type", block.get("type"))
    rope_type = clean_text(kind_value)[:24].lower() if isinstance(kind_value, str) else "scaling"
    original = as_u64(block.get("original_max_position_embeddings")) or None
    scaled = f"{rope_type} x{factor:g}" + (f" from {original:,}" if original else "")
    if rope_type == "yarn":
        # transformers' rule: the block's original window, else max_position_embeddings.
        window = original or found
        stretched = window * factor if window is not None else math.inf
        if (found is None or window == found) and stretched < _TOKENS_CAP:
            return TrainedContext(int(stretched), "yarn's original window x factor", scaled)
        if found is None:
            return None
        why = "already in the window" if window != found else "past any real window"
        return TrainedContext(found, source, f"{scaled}, {why}")
    if found is None:
        return None
    if rope_type in _ALREADY_EXTENDED:
        why = "already in the window"
    elif rope_type == "dynamic":
        why = "at run time only"
    else:
        why = "not a type that stretches the window"
    return TrainedContext(found, source, f"{scaled}, {why}")
