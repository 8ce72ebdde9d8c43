"""Everything the estimate needs from a model, read from disk once.

`read_model_dir` does all the file I/O (config, index, headers); the estimate is
then pure arithmetic over the result, so a UI can recompute it on every slider
step without touching the disk.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from core.display_text import clean_text
from core.errors import ConfigError, ModelError, ModelNotFoundError, describe_os_error
from core.estimate.activation import ActivationDims
from core.estimate.kv_cache import KvArch, classify_kv_arch
from core.estimate.weights import (
    WeightsSource,
    WeightsTerm,
    resolve_weight_bytes,
    weights_from_config,
)
from core.model.config import CONFIG_FILE, ModelConfig, load_config
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
        warnings += (
            f"{display}/{CONFIG_FILE}: not unsigned integers, so read as absent (as mlxcel "
            f"does): {', '.join(mistyped)}",
        )
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


def check_model_dir(path: Path) -> None:
    """Raise ModelError unless `path` is a folder whose entries can be listed."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ModelNotFoundError(path, "no such file or folder") from None
    except OSError as exc:
        raise ModelError(path, describe_os_error(exc)) from None
    if not stat.S_ISDIR(st.st_mode):
        raise ModelError(path, "is not a folder (give the folder that holds config.json)")
    try:
        with os.scandir(path):
            pass
    except OSError as exc:
        raise ModelError(path, f"cannot list the folder: {describe_os_error(exc)}") from None


def read_model_dir(path: Path, display: str | None = None) -> ModelSnapshot:
    """Read a model folder. File faults fall back (with warnings); a bad folder raises."""
    check_model_dir(path)
    warnings: list[str] = []
    config: ModelConfig | None
    try:
        config = load_config(path)
    except ConfigError as exc:
        config = None
        if exc.problem == "not found":
            warnings.append(
                f"{path / CONFIG_FILE}: not found; KV cache and activation are "
                "unavailable and weights fall back"
            )
        else:
            warnings.append(f"{exc}; ignored, so KV cache and activation are unavailable")
    weights = resolve_weight_bytes(path, config)
    return snapshot_from_config(
        display if display is not None else str(path), config, weights, tuple(warnings)
    )


__all__ = [
    "ModelSnapshot",
    "check_model_dir",
    "read_model_dir",
    "snapshot_from_config",
    "weights_from_config",
]
