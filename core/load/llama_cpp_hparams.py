"""A GGUF model's dimensions as llama.cpp reads them (`src/llama-model.cpp`, `src/models/`).

The fields carry llama.cpp's own names (`n_embd_k_gqa`, `n_swa`, `n_embd_r`...) and are
read from the GGUF keys llama.cpp reads, with its defaults where a key is absent: the head
size is `n_embd / n_head` unless `attention.key_length` says otherwise, `head_count_kv`
defaults to `head_count` and may be one value per layer, and each architecture's sliding
window pattern is the one its `load_arch_hparams` sets. The rules follow the llama.cpp
that llama-cpp-python 0.3.36 vendors (the one the golden tables were made with).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from core.errors import ModelError
from core.load.load import Origin, Sourced


class GgufTensor(Protocol):
    """What the memory model needs of one tensor info: its name, ggml shape and bytes."""

    @property
    def name(self) -> str: ...

    @property
    def shape(self) -> tuple[int, ...]:
        """ggml's order: the innermost dimension first (`ne[0]`)."""
        ...

    @property
    def nbytes(self) -> int: ...


@dataclass(frozen=True)
class SwaRule:
    """How one architecture marks its sliding-window layers (its `load_arch_hparams`)."""

    pattern: int
    """Every `pattern`-th layer is full attention (`set_swa_pattern`); 0: every layer SWA."""
    default_window: int = 0
    """The window when the GGUF has no `attention.sliding_window` (0: SWA only with the key)."""
    dense_first: bool = False
    """The full layer comes first in each group (`il % pattern == 0`), not last."""


# Architectures whose layers llama.cpp sizes with the sliding-window cache, and their rule.
SWA_RULES: dict[str, SwaRule] = {
    "gemma2": SwaRule(2, default_window=4096),
    "gemma3": SwaRule(6),
    "gemma3n": SwaRule(5),
    "cohere2": SwaRule(4),
    "gpt-oss": SwaRule(2),
    "olmo2": SwaRule(4),
    "exaone4": SwaRule(4, default_window=4096),
    "llama4": SwaRule(4, default_window=8192),
    "smallthinker": SwaRule(4, default_window=4096, dense_first=True),
}

# llama.cpp turns a Phi-3 sliding window off (`src/models/phi3.cpp`: "Phi SWA is currently
# disabled"): its full cache is sized for every layer, whatever the metadata says.
SWA_DISABLED = frozenset({"phi3"})

# `llm_arch_is_recurrent` and `llm_arch_is_hybrid` (src/llama-arch.cpp).
RECURRENT_ARCHS = frozenset({"mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"})
HYBRID_ARCHS = frozenset(
    {
        "jamba",
        "falcon-h1",
        "plamo2",
        "granitehybrid",
        "lfm2",
        "lfm2moe",
        "nemotron_h",
        "nemotron_h_moe",
        "qwen3next",
        "qwen35",
        "qwen35moe",
    }
)

# Tensors llama.cpp puts on the input layer (always the host: "very little benefit to
# offloading the input layer"). LFM2 names its output norm `token_embd_norm`.
INPUT_TENSORS = ("token_embd.", "token_types.", "position_embd.", "token_embd_norm.")
OUTPUT_NORM_AS_EMBD_NORM = frozenset({"lfm2", "lfm2moe"})


@dataclass(frozen=True)
class LlamaHparams:
    """One model's dimensions, per layer where llama.cpp keeps them per layer."""

    arch: str
    n_layer: int
    n_embd: int
    n_vocab: int
    n_ctx_train: int
    n_head: int
    """The most query heads of any layer."""
    n_ff: int
    """The widest dense feed-forward (`feed_forward_length`), 0 when there is none."""
    n_ff_exp: int
    n_expert_used: int
    n_head_kv: tuple[int, ...]
    n_embd_head_k: tuple[int, ...]
    n_embd_head_v: tuple[int, ...]
    is_swa: tuple[bool, ...]
    is_recr: tuple[bool, ...]
    n_swa: int
    is_mla: bool
    """DeepSeek's multi-head latent attention: the cache holds K (the latent) and no V."""
    n_embd_r: int
    """A recurrent layer's conv state per cell (f32 values)."""
    n_embd_s: int
    """A recurrent layer's SSM state per cell (f32 values)."""
    known_arch: bool
    """llama.cpp's rules for this architecture are in this module; else the generic ones."""
    sources: tuple[Sourced, ...]

    def n_embd_k_gqa(self, il: int) -> int:
        return self.n_embd_head_k[il] * self.n_head_kv[il]

    def n_embd_v_gqa(self, il: int) -> int:
        return self.n_embd_head_v[il] * self.n_head_kv[il]

    @property
    def is_recurrent(self) -> bool:
        """Every layer is recurrent (Mamba, RWKV): no KV cache at all."""
        return self.arch in RECURRENT_ARCHS

    @property
    def is_hybrid(self) -> bool:
        return self.arch in HYBRID_ARCHS


def _int(meta: Mapping[str, object], key: str) -> int | None:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _array(value: object) -> tuple[object, ...] | None:
    """An array's values: a plain sequence, or the GGUF reader's array record (`values`,
    None when only its length was kept)."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return tuple(value)
    values = getattr(value, "values", None)
    if isinstance(values, tuple):
        return values
    return None


def _array_length(value: object) -> int | None:
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return len(value)
    length = getattr(value, "length", None)
    return length if isinstance(length, int) else None


def _per_layer(
    meta: Mapping[str, object], key: str, n_layer: int, where: str
) -> tuple[int, ...] | None:
    """A key llama.cpp reads with `get_key_or_arr`: one value, or one per layer."""
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n_layer
    items = _array(value)
    if items is None:
        raise ModelError(where, f"{key} is not a number or an array of numbers")
    ints = tuple(v for v in items if isinstance(v, int) and not isinstance(v, bool))
    if len(items) != n_layer or len(ints) != n_layer:
        raise ModelError(where, f"{key} has {len(items)} values for {n_layer} layers")
    return ints


def _n_vocab(meta: Mapping[str, object], arch: str, tensors: Sequence[GgufTensor]) -> int:
    """llama.cpp's `vocab.n_tokens()`: the token list, else the embedding's rows."""
    tokens = _array_length(meta.get("tokenizer.ggml.tokens"))
    if tokens is not None:
        return tokens
    if (size := _int(meta, f"{arch}.vocab_size")) is not None:
        return size
    for t in tensors:
        if t.name == "token_embd.weight" and len(t.shape) >= 2:
            return t.shape[1]
    return 0


def _swa_layers(
    meta: Mapping[str, object], arch: str, n_layer: int, recr: tuple[bool, ...]
) -> tuple[tuple[bool, ...], int, list[str]]:
    """Which layers use the sliding-window cache, the window, and notes."""
    notes: list[str] = []
    window = _int(meta, f"{arch}.attention.sliding_window")
    none = (False,) * n_layer
    if arch in SWA_DISABLED:
        if window:
            notes.append(f"llama.cpp turns {arch}'s sliding window ({window}) off: full cache")
        return none, 0, notes
    if arch in ("lfm2", "lfm2moe"):
        if not window:
            return none, 0, notes
        return tuple(not r for r in recr), window, notes
    rule = SWA_RULES.get(arch)
    if rule is None:
        if window:
            notes.append(
                f"sliding_window {window} in the metadata, but vramscope does not know "
                f"{arch}'s sliding-window rule: every layer sized for the full context"
            )
        return none, 0, notes
    window = window or rule.default_window
    if not window:
        return none, 0, notes
    pattern_key = f"{arch}.attention.sliding_window_pattern"
    pattern_values = _array(meta.get(pattern_key))
    if pattern_values is not None:
        flags = tuple(bool(v) for v in pattern_values)
        if len(flags) != n_layer:
            raise ModelError(arch, f"{pattern_key} has {len(flags)} values for {n_layer} layers")
        return flags, window, notes
    n_pattern = _int(meta, pattern_key)
    n_pattern = rule.pattern if n_pattern is None else n_pattern
    flags = tuple(
        n_pattern == 0
        or ((il % n_pattern != 0) if rule.dense_first else (il % n_pattern < n_pattern - 1))
        for il in range(n_layer)
    )
    return flags, window, notes


def _recurrent_layers(
    meta: Mapping[str, object], arch: str, head_kv: tuple[int, ...]
) -> tuple[bool, ...]:
    n_layer = len(head_kv)
    if arch in RECURRENT_ARCHS:
        return (True,) * n_layer
    if arch not in HYBRID_ARCHS:
        return (False,) * n_layer
    if arch in ("qwen3next", "qwen35", "qwen35moe"):
        interval = _int(meta, f"{arch}.full_attention_interval") or 4
        return tuple((il + 1) % interval != 0 for il in range(n_layer))
    # LFM2, Jamba, Granite hybrid, Nemotron-H: a layer without KV heads is recurrent.
    return tuple(n == 0 for n in head_kv)


def _recurrent_state(meta: Mapping[str, object], arch: str, n_embd: int) -> tuple[int, int]:
    """`n_embd_r()` and `n_embd_s()` (src/llama-hparams.cpp)."""
    if arch in ("lfm2", "lfm2moe"):
        l_cache = _int(meta, f"{arch}.shortconv.l_cache") or 0
        return n_embd * max(l_cache - 1, 0), 0
    if arch.startswith("rwkv") or arch == "arwkv7":
        head = _int(meta, f"{arch}.wkv.head_size") or 0
        shift = _int(meta, f"{arch}.token_shift_count") or 2
        return shift * n_embd, n_embd * head
    d_conv = _int(meta, f"{arch}.ssm.conv_kernel") or 0
    d_inner = _int(meta, f"{arch}.ssm.inner_size") or 0
    d_state = _int(meta, f"{arch}.ssm.state_size") or 0
    n_group = _int(meta, f"{arch}.ssm.group_count") or 0
    n_conv = max(d_conv - 1, 0) * (d_inner + 2 * n_group * d_state)
    return n_conv, d_state * d_inner


def read_hparams(
    meta: Mapping[str, object], tensors: Sequence[GgufTensor], where: str
) -> tuple[LlamaHparams, tuple[str, ...]]:
    """The dimensions llama.cpp would read from this GGUF, and notes on what was assumed.

    Raises ModelError (naming `where`) when a key llama.cpp requires is missing.
    """
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ModelError(where, "no general.architecture in the GGUF metadata")
    notes: list[str] = []

    def need(key: str) -> int:
        value = _int(meta, f"{arch}.{key}")
        if value is None:
            raise ModelError(where, f"no {arch}.{key} in the GGUF metadata")
        return value

    n_layer = need("block_count")
    n_embd = need("embedding_length")
    n_ctx_train = _int(meta, f"{arch}.context_length") or 0
    heads = _per_layer(meta, f"{arch}.attention.head_count", n_layer, where) or (0,) * n_layer
    heads_kv = _per_layer(meta, f"{arch}.attention.head_count_kv", n_layer, where) or heads
    n_head = heads[0] if heads else 0
    sources = [
        Sourced("n_layer", n_layer, Origin.GGUF, f"{arch}.block_count"),
        Sourced("n_embd", n_embd, Origin.GGUF, f"{arch}.embedding_length"),
    ]
    if n_head > 0:
        head_k = _int(meta, f"{arch}.attention.key_length") or n_embd // n_head
        head_v = _int(meta, f"{arch}.attention.value_length") or n_embd // n_head
    else:
        head_k = head_v = 0
    head_k_swa = _int(meta, f"{arch}.attention.key_length_swa") or head_k
    head_v_swa = _int(meta, f"{arch}.attention.value_length_swa") or head_v
    is_mla = bool(_int(meta, f"{arch}.attention.key_length_mla")) and bool(
        _int(meta, f"{arch}.attention.value_length_mla")
    )
    recr = _recurrent_layers(meta, arch, heads_kv)
    is_swa, n_swa, swa_notes = _swa_layers(meta, arch, n_layer, recr)
    notes.extend(swa_notes)
    n_embd_r, n_embd_s = _recurrent_state(meta, arch, n_embd)
    known = arch in KNOWN_ARCHS
    if not known:
        notes.append(
            f"vramscope does not know llama.cpp's rules for {arch}: "
            "the standard KV cache of every layer assumed"
        )
    sources += [
        Sourced(
            "n_head_kv", max(heads_kv, default=0), Origin.GGUF, f"{arch}.attention.head_count_kv"
        ),
        Sourced(
            "n_embd_head_k", head_k, Origin.GGUF, f"{arch}.attention.key_length or n_embd/n_head"
        ),
        Sourced(
            "n_embd_head_v", head_v, Origin.GGUF, f"{arch}.attention.value_length or n_embd/n_head"
        ),
        Sourced("n_ctx_train", n_ctx_train, Origin.GGUF, f"{arch}.context_length"),
    ]
    if n_swa:
        sources.append(
            Sourced(
                "n_swa", n_swa, Origin.GGUF, f"{sum(is_swa)} of {n_layer} layers sliding-window"
            )
        )
    hp = LlamaHparams(
        arch=arch,
        n_layer=n_layer,
        n_embd=n_embd,
        n_vocab=_n_vocab(meta, arch, tensors),
        n_ctx_train=n_ctx_train,
        n_head=max(heads, default=0),
        n_ff=max(_per_layer(meta, f"{arch}.feed_forward_length", n_layer, where) or (0,)),
        n_ff_exp=_int(meta, f"{arch}.expert_feed_forward_length") or 0,
        n_expert_used=_int(meta, f"{arch}.expert_used_count") or 0,
        n_head_kv=heads_kv,
        n_embd_head_k=tuple(head_k_swa if s else head_k for s in is_swa),
        n_embd_head_v=tuple(head_v_swa if s else head_v for s in is_swa),
        is_swa=is_swa,
        is_recr=recr,
        n_swa=n_swa,
        is_mla=is_mla,
        n_embd_r=n_embd_r,
        n_embd_s=n_embd_s,
        known_arch=known,
        sources=tuple(sources),
    )
    return hp, tuple(notes)


# The architectures whose KV layout this module follows llama.cpp for (the standard cache,
# the sliding-window ones above, MLA, the recurrent and hybrid ones).
KNOWN_ARCHS = frozenset(
    {
        "llama",
        "mistral3",
        "qwen2",
        "qwen2moe",
        "qwen3",
        "qwen3moe",
        "phi3",
        "deepseek2",
        "granite",
        "granitemoe",
        "starcoder2",
        "command-r",
        "internlm2",
        "olmo",
        "mixtral",
        *SWA_RULES,
        *RECURRENT_ARCHS,
        *HYBRID_ARCHS,
    }
)


def layer_of(name: str, n_layer: int, arch: str) -> int:
    """Which of llama.cpp's layers a tensor is on: `blk.N.` is layer N, the input layer's
    tensors are -1 (the host), everything else the output layer (`n_layer`)."""
    if name.startswith("blk."):
        head = name[4:].split(".", 1)[0]
        if head.isdigit():
            return int(head)
    if name.startswith("token_embd_norm.") and arch in OUTPUT_NORM_AS_EMBD_NORM:
        return n_layer
    if name.startswith(INPUT_TENSORS):
        return -1
    return n_layer
