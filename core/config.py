"""Reading `config.json` the way mlxcel reads it: typed lookups over field aliases.

Every read goes through `text_config` when it is a JSON object (VLM nesting), and
takes the first alias whose value has the right JSON type; a `null`, float, string
or boolean where an unsigned integer is expected counts as absent.
"""

from __future__ import annotations

import json
import math
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.activation import ActivationDims
from core.errors import ConfigError, describe_os_error
from core.units import U64_MAX, sat_mul

CONFIG_FILE = "config.json"
CONFIG_SIZE_CAP = 16 * 1024 * 1024  # real configs are a few KB; refuse to slurp huge files

LAYER_COUNT_KEYS = ("num_hidden_layers", "n_layers", "num_layers", "n_layer")
HIDDEN_SIZE_KEYS = ("hidden_size", "d_model", "dim", "model_dim", "n_embd")
NUM_HEADS_KEYS = ("num_attention_heads", "num_heads", "n_heads", "n_head")
NUM_KV_HEADS_KEYS = (
    "num_key_value_heads",
    "num_kv_heads",
    "n_kv_heads",
    "n_head_kv",
    "multi_query_group_num",
)
HEAD_DIM_KEYS = ("head_dim", "head_size")
INTERMEDIATE_SIZE_KEYS = ("intermediate_size", "ffn_dim", "ffn_hidden_size")
EXPERT_COUNT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
MULTI_QUERY_KEY = "multi_query"

# Families whose inspect report carries the paged-decode workspace reserve.
PER_SLOT_OVERHEAD_FAMILIES = frozenset({"llama", "llama4", "qwen3", "qwen3_5", "gemma3"})

JsonObject = Mapping[str, Any]


def as_u64(value: Any) -> int | None:
    """The value if it is a JSON integer in [0, 2^64 - 1] (never a bool), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U64_MAX:
        return value
    return None


def as_f64(value: Any) -> float | None:
    """The value as a float if it is a JSON number (never a bool), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # integers past 1.8e308 become inf, as serde_json's f64 does
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return value
    return None


def get_u64(obj: JsonObject, keys: Sequence[str]) -> int | None:
    """The first alias in `keys` whose value is an unsigned 64-bit integer."""
    for key in keys:
        value = as_u64(obj.get(key))
        if value is not None:
            return value
    return None


def get_f64(obj: JsonObject, keys: Sequence[str]) -> float | None:
    """The first alias in `keys` whose value is a JSON number."""
    for key in keys:
        value = as_f64(obj.get(key))
        if value is not None:
            return value
    return None


@dataclass(frozen=True)
class ModelConfig:
    """A parsed `config.json` with the `text_config` view the estimator reads."""

    root: JsonObject
    """The whole JSON object."""
    text: JsonObject = field(repr=False)
    """`root["text_config"]` when it is an object, else `root`."""

    @classmethod
    def from_dict(cls, root: JsonObject) -> ModelConfig:
        """Wrap a decoded JSON object."""
        text = root.get("text_config")
        return cls(root=root, text=text if isinstance(text, Mapping) else root)

    @property
    def model_type(self) -> str:
        """Lowercased `model_type` of the text view, else of the root, else empty."""
        for obj in (self.text, self.root):
            value = obj.get("model_type")
            if isinstance(value, str):
                return value.lower()
        return ""

    @property
    def raw_model_type(self) -> str | None:
        """The root's `model_type` exactly as written (the JSON report's `model_type`)."""
        value = self.root.get("model_type")
        return value if isinstance(value, str) else None

    @property
    def family(self) -> str | None:
        """mlxcel's family slug: root (else text) `model_type`, lowercased, `_text` removed."""
        for obj in (self.root, self.text):
            value = obj.get("model_type")
            if isinstance(value, str):
                slug = value.lower()
                return slug.removesuffix("_text")
        return None

    def u64(self, *keys: str) -> int | None:
        """Typed lookup on the text view."""
        return get_u64(self.text, keys)

    def activation_dims(self) -> ActivationDims | None:
        """Hidden, intermediate (default 4 x hidden) and vocab (default 0) sizes."""
        hidden = self.u64(*HIDDEN_SIZE_KEYS)
        if hidden is None:
            return None
        inter = self.u64(*INTERMEDIATE_SIZE_KEYS)
        vocab = self.u64("vocab_size")
        return ActivationDims(
            hidden=hidden,
            intermediate=sat_mul(4, hidden) if inter is None else inter,
            vocab=0 if vocab is None else vocab,
        )

    def max_position_embeddings(self) -> int | None:
        """The context length the model was trained for, where the config says."""
        return self.u64("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _strict_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def decode_json(data: bytes, what: str) -> Any:
    """Decode JSON as serde_json would: UTF-8, no NaN/Infinity, finite floats."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} is not valid UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_strict_float)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{what} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise ValueError(f"{what} nests too deeply") from None


def read_small_file(path: Path, cap: int) -> bytes:
    """Read a regular file of at most `cap` bytes (never a FIFO, device or folder)."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        raise OSError("is not a regular file")
    if st.st_size > cap:
        raise OSError(f"is {st.st_size} bytes, over the {cap}-byte limit")
    with path.open("rb") as fh:
        return fh.read(cap + 1)


def load_config(model_dir: Path) -> ModelConfig:
    """Read `model_dir/config.json`; raise ConfigError naming the fault."""
    path = model_dir / CONFIG_FILE
    try:
        data = read_small_file(path, CONFIG_SIZE_CAP)
    except FileNotFoundError:
        raise ConfigError(path, "not found") from None
    except OSError as exc:
        raise ConfigError(path, describe_os_error(exc)) from None
    try:
        root = decode_json(data, "config.json")
    except ValueError as exc:
        raise ConfigError(path, str(exc)) from None
    if not isinstance(root, dict):
        raise ConfigError(path, f"top level is a JSON {_json_kind(root)}, not an object")
    return ModelConfig.from_dict(root)


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"
