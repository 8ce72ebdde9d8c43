"""Everything the estimate needs from a model: its config view, weights term, KV
architecture and activation sizes.

Built from files once (`core.catalog.model_dir.read_model_dir` does all the file I/O:
config, index, headers), or from a profile or a Hub read; the estimate is then pure
arithmetic over it, so a UI can recompute it on every slider step without touching
the disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.display_text import clean_text
from core.estimate.kv_cache import KvArch, classify_kv_arch
from core.estimate.weights import WeightsSource, WeightsTerm, read_as_numbers
from core.model.config import CONFIG_FILE, ActivationDims, ModelConfig
from core.model.shape_count import analytical_warning


@dataclass(frozen=True)
class ModelSnapshot:
    """A model as the estimator sees it: config view, weights term, KV architecture."""

    display: str
    """The model as the user named it (the banner's `Model:` line)."""
    config: ModelConfig | None
    weights: WeightsTerm
    kv_arch: KvArch | None
    activation_dims: ActivationDims | None
    warnings: tuple[str, ...] = field(default=())
    source: str | None = None
    """Where the files came from when not from disk (`Hugging Face Hub (...), main @ <commit>`)."""
    notes: tuple[str, ...] = field(default=())
    """One-line notes for stderr (an answer from the Hub store while offline)."""

    @property
    def model_type(self) -> str | None:
        """Raw root `model_type` (JSON report)."""
        return self.config.raw_model_type if self.config else None

    @property
    def family(self) -> str | None:
        """Family slug (JSON report)."""
        return self.config.family if self.config else None

    @property
    def max_position_embeddings(self) -> int | None:
        """Trained context length, where the config says."""
        return self.config.max_position_embeddings() if self.config else None


def snapshot_from_config(
    display: str, config: ModelConfig | None, weights: WeightsTerm, warnings: tuple[str, ...] = ()
) -> ModelSnapshot:
    """Derive the KV architecture and activation sizes from a config (no I/O)."""
    mistyped = config.mistyped_fields() if config is not None else []
    if mistyped:
        line = (
            f"{display}/{CONFIG_FILE}: not unsigned integers, so read as absent (as mlxcel "
            f"does): {', '.join(mistyped)}"
        )
        numbers = read_as_numbers(config) if config is not None else []
        if numbers and weights.source is WeightsSource.ANALYTICAL_CONFIG:
            # mlxcel's analytical count reads them as floats: the weights are not the 7 B
            # fallback an absent size gives, but what those numbers make.
            line = line.replace(
                "read as absent (as", "read as absent by the KV cache and activation (as"
            )
            line += (
                f"; the analytical weight count reads {', '.join(numbers)} as a number, "
                f"as mlxcel does: weights {weights.bytes:,} bytes"
            )
        warnings += (line,)
    if config is not None and weights.source is WeightsSource.ANALYTICAL_CONFIG:
        # mlxcel's bytes stay; one line when its MoE- and dtype-blind count looks far off.
        far_off = analytical_warning(config, weights.bytes)
        warnings += (far_off,) if far_off else ()
    return ModelSnapshot(
        display=display,
        config=config,
        weights=weights,
        kv_arch=classify_kv_arch(config) if config is not None else None,
        activation_dims=config.activation_dims() if config is not None else None,
        # Display text that names files and config values: cleaned once for every screen.
        warnings=tuple(clean_text(w) for w in warnings + weights.warnings),
    )
