"""Reading `config.json` the way mlxcel reads it: typed lookups over field aliases.

Every read goes through `text_config` when the key is present (VLM nesting), and
takes the first alias whose value has the right JSON type; a `null`, float, string
or boolean where an unsigned integer is expected counts as absent.
"""

from __future__ import annotations

import errno
import json
import math
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ConfigError, OversizedFileError, describe_os_error
from core.numbers import decimal_to_int
from core.regular_file import read_regular
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
_ALL_ALIAS_LISTS = (
    LAYER_COUNT_KEYS,
    HIDDEN_SIZE_KEYS,
    NUM_HEADS_KEYS,
    NUM_KV_HEADS_KEYS,
    HEAD_DIM_KEYS,
    INTERMEDIATE_SIZE_KEYS,
    EXPERT_COUNT_KEYS,
)

# Every field the estimate reads as an unsigned integer (beside the alias lists).
OTHER_U64_KEYS = (
    "vocab_size",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "sliding_window",
    "sliding_window_pattern",
    "attn_layer_period",
    "attn_layer_offset",
    "full_attention_interval",
    "attention_window_size",
)
# `null` is common and harmless in optional fields (`"sliding_window": null`); it is
# only worth a warning where the estimate then loses the model's size.
_REQUIRED_ALIAS_LISTS = (HIDDEN_SIZE_KEYS, LAYER_COUNT_KEYS)

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
class ActivationDims:
    """The config sizes the activation term needs."""

    hidden: int
    intermediate: int
    vocab: int


@dataclass(frozen=True)
class ModelConfig:
    """A parsed `config.json` with the `text_config` view the estimator reads."""

    root: JsonObject
    """The whole JSON object."""
    text: JsonObject = field(repr=False)
    """`root["text_config"]` when present (an empty view unless an object), else `root`."""

    @classmethod
    def from_dict(cls, root: JsonObject) -> ModelConfig:
        """Wrap a decoded JSON object."""
        if "text_config" not in root:
            return cls(root=root, text=root)
        text = root["text_config"]
        # A present text_config is used whatever its type; mlxcel's `get` on a
        # null, array, string or number finds nothing, so neither do we.
        return cls(root=root, text=text if isinstance(text, Mapping) else {})

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

    def mistyped_fields(self) -> list[str]:
        """`key (value)` for each size field mlxcel's typed lookups skip as absent.

        Strings, booleans, floats, negatives and out-of-range integers are listed;
        `null` only for hidden size and layer count when no alias gives them.
        """
        found: list[str] = []
        for keys in (*_ALL_ALIAS_LISTS, *((k,) for k in OTHER_U64_KEYS)):
            required = keys in _REQUIRED_ALIAS_LISTS
            for key in keys:
                if key not in self.text:
                    continue
                value = self.text[key]
                if as_u64(value) is not None:
                    continue
                if value is None and not (required and get_u64(self.text, keys) is None):
                    continue
                found.append(f"{key} ({_short_json(value)})")
        return found

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


def _short_json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # pragma: no cover - decoded JSON always re-encodes
        text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _strict_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:32]} is out of range")
    return value


_I64_MIN_MAGNITUDE = 1 << 63


def _serde_int(text: str) -> int | float:
    """An integer literal as serde_json types it.

    u64 for non-negative values that fit, i64 for negative ones; `-0` and every
    other integer becomes an f64, and one past the f64 range is an error.
    """
    # JSON's integer grammar is -?(0|[1-9][0-9]*): 18 characters or fewer fit u64 (and,
    # signed, i64) whole, so Python's int() is exact there; `-0` stays an f64. A
    # safetensors header holds two offsets and a shape for every tensor (594,764
    # integers in Qwen3-Next's), all of them on this path.
    if len(text) <= 18 and text != "-0":
        return int(text)
    negative = text.startswith("-")
    magnitude = decimal_to_int(text[1:] if negative else text)
    if magnitude is not None:
        if not negative and magnitude <= U64_MAX:
            return magnitude
        if negative and 0 < magnitude <= _I64_MIN_MAGNITUDE:
            return -magnitude
    return _strict_float(text)


# serde_json refuses the 128th level of nested arrays and objects.
SERDE_MAX_DEPTH = 127
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _serde_rule_broken(value: Any, text: str) -> str | None:
    """What serde_json would refuse in a decoded value that Python's json accepted."""
    if text.count("[") + text.count("{") > SERDE_MAX_DEPTH and _deeper_than_serde(text):
        return f"nesting deeper than {SERDE_MAX_DEPTH} levels"
    if "\\u" not in text or _SURROGATE_ESCAPE.search(text) is None:
        return None  # the common case: nothing to walk
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(not _is_utf8(k) for k in item):
                return "a lone surrogate escape"
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and not _is_utf8(item):
            return "a lone surrogate escape"
    return None


_ESCAPE = re.compile(r"\\.")
_NOT_BRACKET_OR_QUOTE = re.compile(r'[^\[\]{}"]+')
_JSON_STRING = re.compile(r'"[^"]*"')
_INNERMOST = re.compile(r"\[\]|\{\}")


def _deeper_than_serde(text: str) -> bool:
    """Whether valid JSON `text` nests deeper than serde_json's limit: its brackets alone
    (escapes, then everything but brackets and quotes, then strings taken out), each
    pass taking out the innermost pairs, one level a pass. A walk of the decoded value
    visited every number (a safetensors header's 594,764 in Qwen3-Next's: 0.4 s), where
    this is a few scans of the text in C."""
    shape = _ESCAPE.sub("", text) if "\\" in text else text
    shape = _JSON_STRING.sub("", _NOT_BRACKET_OR_QUOTE.sub("", shape))
    for _ in range(SERDE_MAX_DEPTH):
        if not shape:
            return False
        shape = _INNERMOST.sub("", shape)
    return bool(shape)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decode_json(data: bytes, what: str) -> Any:
    """Decode JSON as serde_json would: UTF-8, no NaN/Infinity, finite numbers,
    at most 127 levels of nesting, no lone surrogate escapes, `-0` a float."""
    try:
        text = data.decode("utf-8")
        value = json.loads(
            text, parse_constant=_reject_constant, parse_float=_strict_float, parse_int=_serde_int
        )
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} is not valid UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{what} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise ValueError(f"{what} is not valid JSON (nesting deeper than 127 levels)") from None
    except ValueError as exc:  # from the number hooks: out of range, NaN, Infinity
        raise ValueError(f"{what} is not valid JSON ({exc})") from None
    except MemoryError:
        raise ValueError(f"{what} is too large to decode in memory") from None
    broken = _serde_rule_broken(value, text)
    if broken is not None:
        raise ValueError(f"{what} is not valid JSON for mlxcel ({broken})")
    return value


MODEL_CAP_REASON = "mlxcel would read it, so vramscope refuses rather than answer from a fallback"
"""Why a model's config or index over its cap is refused (not fallen back past)."""


def read_small_file(path: Path, cap: int, reason: str = MODEL_CAP_REASON) -> bytes:
    """Read a regular file of at most `cap` bytes (never a FIFO, device or folder).

    A larger file raises OversizedFileError (a ModelError, not an OSError) whose message
    ends with `reason` (why this kind of file has this cap): callers that fall back on an
    unreadable file must not fall back on this one."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "is not a regular file", str(path))
    if st.st_size > cap:
        raise OversizedFileError(
            path.parent,
            f"{path.name} is {st.st_size:,} bytes, over vramscope's {cap:,}-byte limit; {reason}",
        )
    data = read_regular(path, cap)  # non-blocking: swapped for a FIFO since the stat
    if len(data) > cap:  # grew between the stat and the read
        raise OversizedFileError(
            path.parent, f"{path.name} grew past vramscope's {cap:,}-byte limit while read"
        )
    return data


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
