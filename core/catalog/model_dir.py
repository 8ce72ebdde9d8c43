"""Reading a model folder from disk, once: its config, then its weights term from the
safetensors files (`core.model.weight_files`) or the config, into the snapshot the
estimate works on (`core.estimate.snapshot`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from core.display_text import clean_text
from core.errors import ConfigError, ModelError, ModelNotFoundError, describe_os_error
from core.estimate.snapshot import ModelSnapshot, snapshot_from_config
from core.estimate.weights import WeightsSource, WeightsTerm, weights_from_config
from core.model.config import CONFIG_FILE, ModelConfig, load_config
from core.model.weight_files import INDEX_FILE, safetensors_weight_bytes

# Names listed in a refusal: enough to recognise the folder, never a screenful.
_NAMES_SHOWN = 3


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


def _listing(names: Iterable[str]) -> str:
    shown = sorted(names)
    text = ", ".join(clean_text(n)[:80] for n in shown[:_NAMES_SHOWN])
    more = len(shown) - _NAMES_SHOWN
    return text + (f" and {more:,} more" if more > 0 else "")


def unreadable_folder_reason(names: frozenset[str], *, index_is_weights: bool = True) -> str | None:
    """Why a folder with neither a config.json nor safetensors weights is no model (what
    it holds), or None when it has either: mlxcel would answer its 7 B guess for any
    folder, and "fits any context" for an empty one is no answer. A shard index counts
    as weights unless `index_is_weights` is False (a listing skips an index alone)."""
    if CONFIG_FILE in names or (index_is_weights and INDEX_FILE in names):
        return None
    if any(n.endswith(".safetensors") for n in names):
        return None
    gguf = [n for n in names if n.endswith(".gguf")]
    if gguf:
        return (
            f"GGUF files only ({_listing(gguf)}): `vramscope inspect` reads them (a file, "
            "the folder, or REPO:QUANT; docs/gguf.md); the rest of vramscope reads "
            "safetensors models with a config.json"
        )
    there = f"it holds {_listing(names)}" if names else "it is empty"
    return f"not a model folder (no config.json, no *.safetensors): {there}"


def read_model_dir(path: Path, display: str | None = None) -> ModelSnapshot:
    """Read a model folder. File faults fall back (with warnings); a folder that is not
    a model (`unreadable_folder_reason`) or cannot be read raises ModelError."""
    check_model_dir(path)
    try:
        names = frozenset(os.listdir(path))
    except OSError as exc:
        raise ModelError(path, f"cannot list the folder: {describe_os_error(exc)}") from None
    reason = unreadable_folder_reason(names)
    if reason is not None:
        raise ModelError(path, reason)
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
