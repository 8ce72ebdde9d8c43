"""Reading a model folder from disk, once: its config, then its weights term from the
safetensors files (`core.model.weight_files`) or the config, into the snapshot the
estimate works on (`core.estimate.snapshot`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from core.errors import ConfigError, ModelError, ModelNotFoundError, describe_os_error
from core.estimate.snapshot import ModelSnapshot, snapshot_from_config
from core.estimate.weights import WeightsSource, WeightsTerm, weights_from_config
from core.model.config import CONFIG_FILE, ModelConfig, load_config
from core.model.weight_files import safetensors_weight_bytes


def resolve_weight_bytes(model_dir: Path, config: ModelConfig | None) -> WeightsTerm:
    """The weights term of a model folder (never raises for file faults)."""
    exact, files, warnings = safetensors_weight_bytes(model_dir)
    if exact is not None:
        return WeightsTerm(exact, WeightsSource.SAFETENSORS_HEADER, tuple(warnings), tuple(files))
    return weights_from_config(config, warnings)


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
