"""The load under MLX as mlx-lm 0.32.2 (and mlxcel) run it: weights, caches, transients.

`plan_mlx_lm` reads a model once: the family's rules (`core.load.families`), every
layer's cache as `make_cache` builds it with its dimensions from the weights first
(`core.load.dims`), and the prefill transient's sizes. `MlxLmPlan.at(tokens)` is then
arithmetic (`core.load.caches`):

    load = weights as stored + the caches after `tokens` + the prefill transient
           + MLX's ROCm in-flight reserve (on ROCm, mlxcel's budget)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.estimate.snapshot import ModelSnapshot
from core.estimate.weights import WeightsSource
from core.load.caches import (
    QUANTIZED_KV_START,
    CacheKind,
    LayerCache,
    Schedule,
    kv_slots,
    layer_bytes,
    quantized,
    rotating_prefill_peak,
    rotating_slots,
)
from core.load.dims import ConfigView, Stored, Tensor, layer_tensors
from core.load.families import STANDARD, Attention, Family, HeadDimRule, Layout, family_of
from core.load.load import EngineLoad, LoadEngine, LoadTerm, Origin, Sourced, TermKind
from core.load.transient import TransientDims, prefill_terms

KV_BITS_INT8 = 8
"""`--kv-cache-mode int8`: mlx-lm's `kv_bits=8`."""
MAX_LAYERS = 4096
"""More layers than this is not a model to size: a hostile config never makes the
load build billions of caches."""


@dataclass(frozen=True)
class NoLoad:
    """Why no load could be made for a model (one line)."""

    reason: str


@dataclass(frozen=True)
class MlxLmPlan:
    """One model read for mlx-lm: `at(tokens)` is arithmetic, no I/O."""

    caches: tuple[LayerCache, ...]
    """One per layer, as `make_cache` builds them."""
    weights: LoadTerm
    transient_dims: TransientDims
    sources: tuple[Sourced, ...]
    notes: tuple[str, ...] = ()
    batch: int = 1
    kv_bits: int | None = None
    quantized_kv_start: int = QUANTIZED_KV_START
    inflight: LoadTerm | None = None
    """MLX's ROCm in-flight reserve (None off ROCm)."""
    family: str = ""
    """The mlx-lm module (empty: a family vramscope does not know)."""

    @property
    def engine(self) -> LoadEngine:
        return LoadEngine.MLX_LM

    @property
    def sliding_layers(self) -> int:
        """Layers held in a `RotatingKVCache`."""
        return sum(c.kind is CacheKind.ROTATING for c in self.caches)

    @property
    def state_layers(self) -> int:
        """Layers holding a fixed state (`ArraysCache`)."""
        return sum(c.kind is CacheKind.ARRAYS for c in self.caches)

    def kv_term(self, schedule: Schedule) -> LoadTerm:
        """Every layer's cache after the schedule, as one KV term."""
        b, bits, start = self.batch, self.kv_bits, self.quantized_kv_start
        total = sum(layer_bytes(c, schedule, b, bits, start) for c in self.caches)
        return LoadTerm(TermKind.KV, total, Origin.ENGINE_RULE, self._kv_detail(schedule))

    def _kv_detail(self, schedule: Schedule) -> str:
        n = len(self.caches)
        parts = []
        full = n - self.sliding_layers - self.state_layers
        slots = kv_slots(schedule.tokens)
        if full:
            q = any(quantized(c.kind, schedule.tokens, self.kv_bits, self.quantized_kv_start)
                    for c in self.caches)  # fmt: skip
            kind = f"{self.kv_bits}-bit QuantizedKVCache" if q else "KVCache"
            parts.append(f"{full} of {n} layers {kind} ({slots:,} slots)")
        windows = sorted({c.window for c in self.caches if c.kind is CacheKind.ROTATING})
        for w in windows:
            count = sum(c.kind is CacheKind.ROTATING and c.window == w for c in self.caches)
            held = rotating_slots(schedule, w)
            parts.append(
                f"{count} of {n} layers sliding-window ({w:,} tokens, {held:,} slots held)"
            )
        if self.state_layers:
            parts.append(f"{self.state_layers} of {n} layers linear-attention state")
        return "; ".join(parts) + ", mlx-lm 0.32.2's make_cache"

    def at(self, tokens: int, prompt: int | None = None) -> EngineLoad:
        """The load after `tokens` tokens (prompt and generated together); `prompt`: how
        many of them are the prompt (default all: the longest prefill)."""
        schedule = Schedule.of(tokens, prompt)
        terms = [self.weights, self.kv_term(schedule)]
        windows: tuple[int | None, ...] = tuple(
            {c.window if c.kind is CacheKind.ROTATING else None for c in self.caches
             if c.kind is not CacheKind.ARRAYS}
        )  # fmt: skip
        terms.extend(prefill_terms(self.transient_dims, schedule, self.batch, windows))
        over = self._overshoot(schedule)
        if over:
            terms.append(
                LoadTerm(
                    TermKind.TRANSIENT,
                    over,
                    Origin.ENGINE_RULE,
                    "sliding-window caches during the prefill: a chunk concatenated onto "
                    "the window before the next token trims it (RotatingKVCache)",
                )
            )
        if self.inflight is not None:
            terms.append(self.inflight)
        return EngineLoad(self.engine, schedule.tokens, tuple(terms), self.sources, self.notes)

    def _overshoot(self, schedule: Schedule) -> int:
        """What rotating caches hold over their end state while a prefill chunk is in."""
        total = 0
        for c in self.caches:
            if c.kind is CacheKind.ROTATING:
                extra = rotating_prefill_peak(schedule, c.window) - rotating_slots(
                    schedule, c.window
                )
                total += self.batch * extra * c.token_bytes()
        return total


def plan_mlx_lm(
    snapshot: ModelSnapshot,
    tensors: Sequence[Tensor] | None,
    *,
    kv_int8: bool = False,
    batch: int = 1,
    inflight_bytes: int = 0,
    inflight_detail: str = "",
    quantized_kv_start: int = QUANTIZED_KV_START,
) -> MlxLmPlan | NoLoad:
    """Read `snapshot` (and its tensor list, when read) for mlx-lm, or say why not."""
    if snapshot.config is None:
        return NoLoad("no config.json: the load needs the model's layers")
    if snapshot.weights.source is not WeightsSource.SAFETENSORS_HEADER:
        return NoLoad(
            f"the weights term came from the {snapshot.weights.source.text_label}; "
            "the load needs safetensors headers"
        )
    reader = _Reader(snapshot, tensors or ())
    made = reader.caches()
    if isinstance(made, NoLoad):
        return made
    weights = LoadTerm(
        TermKind.WEIGHTS,
        snapshot.weights.bytes,
        Origin.WEIGHTS,
        "as stored (safetensors headers), mlxcel's figure",
    )
    kv_bits = KV_BITS_INT8 if kv_int8 else None
    problem = reader.family.int8_problem
    if kv_int8 and not problem and any(c.kind is CacheKind.ROTATING for c in made):
        problem = "RotatingKVCache.to_quantized raises NotImplementedError"
    if kv_int8 and problem:
        kv_bits = None
        reader.notes.append(
            f"--kv-cache-mode int8: mlx-lm 0.32.2 fails once the cache reaches "
            f"quantized_kv_start ({quantized_kv_start:,} tokens) for this model ({problem}); "
            "the cache is counted unquantized"
        )
    inflight = (
        LoadTerm(TermKind.INFLIGHT, inflight_bytes, Origin.SETTING, inflight_detail)
        if inflight_bytes
        else None
    )
    return MlxLmPlan(
        caches=made,
        weights=weights,
        transient_dims=reader.transient_dims(made),
        sources=tuple(dict.fromkeys(reader.sources)),
        notes=tuple(dict.fromkeys(reader.notes)),
        batch=max(1, batch),
        kv_bits=kv_bits,
        quantized_kv_start=quantized_kv_start,
        inflight=inflight,
        family=reader.family.module,
    )


class _Reader:
    """One pass over a model's config and tensors, collecting sources and notes."""

    def __init__(self, snapshot: ModelSnapshot, tensors: Sequence[Tensor]) -> None:
        config = snapshot.config
        assert config is not None
        model_type = (config.raw_model_type or config.model_type or "").lower()
        known = family_of(model_type)
        self.family: Family = known or STANDARD
        self.cv = ConfigView(config, self.family.defaults)
        self.layers = layer_tensors(tensors)
        self.has_tensors = bool(tensors)
        self.sources: list[Sourced] = []
        self.notes: list[str] = []
        self.bits = self.cv.quantization_bits
        if known is None:
            self.notes.append(
                f"model_type {model_type or '(none)'!r}: a family vramscope's mlx-lm load "
                "does not know; the standard cache (a KVCache per layer) is counted"
            )
        if not self.has_tensors:
            self.notes.append(
                "no tensor shapes were read: the dimensions come from config.json and "
                "the family's defaults"
            )

    def used(self, found: Sourced | None) -> Sourced | None:
        if found is not None:
            self.sources.append(found)
        return found

    def field(self, key: str) -> int | None:
        found = self.used(self.cv.get(key))
        return None if found is None else found.value

    # -- layers -------------------------------------------------------------------

    def layer_count(self) -> int | None:
        n = self.field("num_hidden_layers")
        if n is None and self.layers:
            n = max(self.layers) + 1
            self.used(Sourced("num_hidden_layers", n, Origin.WEIGHTS, "highest layer index + 1"))
        return n

    def layer_types(self, n: int) -> list[str] | None:
        raw = self.cv.raw("layer_types")
        if isinstance(raw, list) and all(isinstance(t, str) for t in raw):
            return [str(t) for t in raw]
        if raw is not None:
            self.notes.append("layer_types is not a list of names: every layer counted full")
        return None

    def kinds(self, n: int) -> list[tuple[CacheKind, int]] | NoLoad:
        """(cache class, window) per layer, as the family's `make_cache` lays them out."""
        layout = self.family.layout
        if layout is Layout.PATTERN:
            pattern = self.field("sliding_window_pattern")
            window = self.field("sliding_window")
            if pattern == 0:
                return NoLoad(
                    "sliding_window_pattern is 0: mlx-lm 0.32.2 takes the layer index "
                    "modulo it and cannot build the model"
                )
            p = pattern or 1
            return [
                (CacheKind.KV, 0) if i % p == p - 1 else self._rotating(window) for i in range(n)
            ]
        if layout is Layout.LINEAR_INTERVAL:
            interval = self.field("full_attention_interval")
            if not interval:
                return NoLoad(
                    "full_attention_interval is 0: mlx-lm 0.32.2 takes the layer index "
                    "modulo it and cannot build the model"
                )
            return [
                (CacheKind.ARRAYS, 0) if (i + 1) % interval else (CacheKind.KV, 0) for i in range(n)
            ]
        if layout in (Layout.LAYER_TYPES, Layout.ALTERNATING):
            types = self.layer_types(n)
            if types is None and layout is Layout.ALTERNATING:
                types = ["sliding_attention", "full_attention"] * (n // 2)
            if types is None:
                return [(CacheKind.KV, 0)] * n
            window = self.field("sliding_window") if "sliding_attention" in types else None
            if len(types) != n:
                self.notes.append(
                    f"layer_types names {len(types)} layers and num_hidden_layers is {n}: "
                    f"mlx-lm builds a cache per layer_types entry ({len(types)})"
                )
            return [
                self._rotating(window) if t == "sliding_attention" else (CacheKind.KV, 0)
                for t in types
            ]
        return [(CacheKind.KV, 0)] * n

    def _rotating(self, window: int | None) -> tuple[CacheKind, int]:
        if not window:
            self.notes.append(
                "a sliding layer with no sliding_window: mlx-lm cannot size its "
                "RotatingKVCache; counted as a full KVCache"
            )
            return (CacheKind.KV, 0)
        return (CacheKind.ROTATING, window)

    # -- one layer's dimensions ------------------------------------------------------

    def head_dim(self, parts: dict[str, Stored]) -> int | None:
        """The head size: the stored `k_norm`, else the family's rule over the config."""
        norm = parts.get("k_norm")
        if norm is not None and norm.shape:
            return self._from_weights("head_dim", norm.shape[0], f"k_norm {list(norm.shape)}")
        rule = self.family.head_dim
        if rule is not HeadDimRule.HIDDEN:
            found = self.cv.get("head_dim")
            if found is not None:
                self.used(found)
                return found.value
        hidden, heads = self.field("hidden_size"), self.field("num_attention_heads")
        if hidden and heads:
            value = hidden // heads
            self.used(
                Sourced(
                    "head_dim", value, Origin.ENGINE_RULE, f"hidden_size {hidden} // heads {heads}"
                )
            )
            return value
        return None

    def _from_weights(self, name: str, value: int, detail: str) -> int:
        """A dimension read from the weights; a note when the config says otherwise."""
        self.used(Sourced(name, value, Origin.WEIGHTS, detail))
        said = self.cv.get(name)
        if said is not None and said.origin is Origin.CONFIG and said.value != value:
            self.notes.append(
                f"{name}: the weights say {value:,} ({detail}), config.json says "
                f"{said.value:,}; the weights' figure is used"
            )
        return value

    def dtype_bytes(self, parts: dict[str, Stored]) -> int:
        for key in ("k_proj", "qkv_proj", "kv_a_proj_with_mqa", "v_proj", "in_proj_qkvz"):
            stored = parts.get(key)
            if stored is not None and stored.activation_bytes:
                dtype = stored.scales_dtype if stored.quantized else stored.dtype
                self.used(
                    Sourced("kv_dtype_bytes", stored.activation_bytes, Origin.WEIGHTS,
                            f"{key} {'scales ' if stored.quantized else ''}{dtype}")
                )  # fmt: skip
                return stored.activation_bytes
        found = self.used(self.cv.dtype_bytes)
        if found is not None:
            return found.value
        self.used(Sourced("kv_dtype_bytes", 2, Origin.ENGINE_RULE, "16-bit assumed"))
        return 2

    def attention(
        self, parts: dict[str, Stored], kind: CacheKind, window: int
    ) -> LayerCache | NoLoad:
        dtype = self.dtype_bytes(parts)
        attn = self.family.attention
        if attn is Attention.MLA_LATENT or attn is Attention.MLA_EXPANDED:
            return self._mla(parts, kind, window, dtype)
        head_dim = self.head_dim(parts)
        if not head_dim:
            return NoLoad("no head size: neither the weights nor config.json give it")
        k_out, v_out = self._kv_widths(parts, head_dim)
        if k_out is None or v_out is None:
            return NoLoad("no KV width: neither k_proj's shape nor num_key_value_heads")
        k_heads, k_dim = _split(k_out, head_dim)
        v_heads, v_dim = _split(v_out, head_dim)
        return LayerCache(kind, k_heads, k_dim, v_heads, v_dim, dtype, window)

    def _kv_widths(self, parts: dict[str, Stored], head_dim: int) -> tuple[int | None, int | None]:
        k, v, qkv = parts.get("k_proj"), parts.get("v_proj"), parts.get("qkv_proj")
        if k is not None and v is not None:
            k_out = self._kv_heads_check(k.out_features, head_dim, f"k_proj {list(k.shape)}")
            return k_out, v.out_features
        if qkv is not None:
            o = parts.get("o_proj")
            q_out = o.in_features(self.bits) if o is not None else None
            if q_out is None:
                heads = self.field("num_attention_heads")
                q_out = heads * head_dim if heads else None
            if q_out is not None and qkv.out_features > q_out:
                each = (qkv.out_features - q_out) // 2
                detail = f"qkv_proj {list(qkv.shape)} less {q_out:,} query rows, halved"
                return self._kv_heads_check(each, head_dim, detail), each
        kv_heads = self.field("num_key_value_heads")
        if kv_heads is None and self.family.kv_heads_default_heads:
            kv_heads = self.field("num_attention_heads")
        if kv_heads is None:
            return None, None
        return kv_heads * head_dim, kv_heads * head_dim

    def _kv_heads_check(self, width: int, head_dim: int, detail: str) -> int:
        if width % head_dim == 0:
            self._from_weights("num_key_value_heads", width // head_dim,
                               f"{detail} / head_dim {head_dim}")  # fmt: skip
        return width

    def _mla(
        self, parts: dict[str, Stored], kind: CacheKind, window: int, dtype: int
    ) -> LayerCache | NoLoad:
        proj, norm = parts.get("kv_a_proj_with_mqa"), parts.get("kv_a_layernorm")
        if norm is not None and norm.shape:
            rank = self._from_weights(
                "kv_lora_rank", norm.shape[0], f"kv_a_layernorm {list(norm.shape)}"
            )
        else:
            rank = self.field("kv_lora_rank") or 0
        if proj is not None and rank and proj.out_features > rank:
            rope = self._from_weights(
                "qk_rope_head_dim", proj.out_features - rank,
                f"kv_a_proj_with_mqa {list(proj.shape)} less kv_lora_rank {rank}",
            )  # fmt: skip
        else:
            rope = self.field("qk_rope_head_dim") or 0
        if not rank or not rope:
            return NoLoad("MLA: no kv_lora_rank or rope size in the weights or config.json")
        if self.family.attention is Attention.MLA_LATENT:
            return LayerCache(kind, 1, rank, 1, rope, dtype, window)
        heads = self.field("num_attention_heads") or 0
        if not heads:
            return NoLoad("MLA: no num_attention_heads")
        q = parts.get("q_b_proj") or parts.get("q_proj")
        o = parts.get("o_proj")
        o_in = o.in_features(self.bits) if o is not None else None
        k_dim = q.out_features // heads if q is not None else None
        if k_dim is None:
            nope = self.field("qk_nope_head_dim") or 0
            k_dim = nope + rope
        v_dim = o_in // heads if o_in else self.field("v_head_dim") or 0
        return LayerCache(kind, heads, k_dim, heads, v_dim, dtype, window)

    def linear_state(self, parts: dict[str, Stored], dtype: int) -> LayerCache | NoLoad:
        """A Gated DeltaNet layer's `ArraysCache`: the conv window in the activations'
        dtype, `(K - 1) x conv_dim`, and the float32 recurrent state `Hv x Dv x Dk`."""
        kernel = self.field("linear_conv_kernel_dim")
        dk, dv = self.field("linear_key_head_dim"), self.field("linear_value_head_dim")
        hk = self.field("linear_num_key_heads")
        a_log = parts.get("A_log")
        if a_log is not None and a_log.shape:
            hv: int | None = self._from_weights(
                "linear_num_value_heads", a_log.shape[0], f"A_log {list(a_log.shape)}"
            )
        else:
            hv = self.field("linear_num_value_heads")
        if not (kernel and dk and dv and hk and hv):
            return NoLoad("linear attention: the conv kernel or head sizes are not in config.json")
        conv_dim = 2 * hk * dk + hv * dv
        state = (kernel - 1) * conv_dim * dtype + hv * dv * dk * 4
        return LayerCache(CacheKind.ARRAYS, dtype_bytes=dtype, state_bytes=state)

    def caches(self) -> tuple[LayerCache, ...] | NoLoad:
        n = self.layer_count()
        if not n:
            return NoLoad("no layer count: num_hidden_layers is not in config.json")
        types = self.cv.raw("layer_types")
        if n > MAX_LAYERS or (isinstance(types, list) and len(types) > MAX_LAYERS):
            return NoLoad(f"more than {MAX_LAYERS:,} layers: not a model the load sizes")
        kinds = self.kinds(n)
        if isinstance(kinds, NoLoad):
            return kinds
        out: list[LayerCache] = []
        for i, (kind, window) in enumerate(kinds):
            parts = self.layers.get(i, {})
            if kind is CacheKind.ARRAYS:
                made = self.linear_state(parts, self.dtype_bytes(parts))
            else:
                made = self.attention(parts, kind, window)
            if isinstance(made, NoLoad):
                return made
            out.append(made)
        return tuple(out)

    def transient_dims(self, caches: tuple[LayerCache, ...]) -> TransientDims:
        hidden = self.cv.get("hidden_size")
        heads = self.cv.get("num_attention_heads")
        vocab = self.cv.get("vocab_size")
        top_k = self.cv.get("num_experts_per_tok")
        moe_inter = self.cv.get("moe_intermediate_size")
        inter = self.cv.get("intermediate_size")
        k = top_k.value if top_k is not None and self.family.moe else 0
        width = (moe_inter.value * k) if (k and moe_inter) else (inter.value if inter else 0)
        dtype = next((c.dtype_bytes for c in caches if c.kind is not CacheKind.ARRAYS), 2)
        attention = [c for c in caches if c.kind is not CacheKind.ARRAYS]
        n_heads = heads.value if heads else 0
        # The queries are as wide as a key head times the heads (MLA: nope + rope, or
        # the latent the queries are absorbed into).
        head = max((c.k_dim for c in attention), default=0)
        return TransientDims(
            heads=n_heads,
            hidden=hidden.value if hidden else 0,
            intermediate=width,
            vocab=vocab.value if vocab else 0,
            dtype_bytes=dtype,
            moe_top_k=k,
            query_width=n_heads * head,
            score_extra_copies=self.family.score_extra_copies,
            window_score_copies=self.family.window_score_copies,
            recurrent_state=max(
                (c.state_bytes for c in caches if c.kind is CacheKind.ARRAYS), default=0
            ),
        )


def _split(width: int, head_dim: int) -> tuple[int, int]:
    """(heads, head size) of a KV width; one head of the whole width when it does not
    divide (the bytes are the same; only the int8 groups need the head size)."""
    if head_dim and width % head_dim == 0:
        return width // head_dim, head_dim
    return 1, width
