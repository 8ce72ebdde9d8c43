"""llama.cpp's memory for a GGUF model, term by term, per device (#40).

The load llama.cpp holds for one GGUF, written from the source of the llama.cpp that
llama-cpp-python 0.3.36 vendors and checked against its own dry run (`llama-fit-params`,
tests/core/load/data/llama_cpp_golden.json):

- the weights, each tensor on its layer's place: `--n-gpu-layers N` offloads llama.cpp's
  layers from the last, the output layer (index `n_layer`) first, so N layers are the
  output layer and the last N-1 repeating ones (`src/llama-model.cpp`, `i_gpu_start =
  max(n_layer + 1 - N, 0)`); the input layer (token embeddings) stays on the host; `-1`
  offloads all. A tied output (no `output.weight`) is `token_embd.weight` duplicated onto
  the output layer's device;
- the KV cache (`src/llama-kv-cache.cpp`): `--ctx-size` padded to 256 cells; per layer
  `n_embd_k_gqa` and `n_embd_v_gqa` values per cell in the cache types' rows (q8_0: 34
  bytes per 32, q4_0: 18 per 32); sliding-window layers hold
  `pad(min(n_ctx_seq, n_swa * seqs + n_ubatch), 256)` cells; `--parallel N` without a
  unified cache gives N streams of `pad(n_ctx / N, 256)` cells each; MLA holds no V;
  recurrent layers hold their conv and SSM state in f32 per sequence;
- the output buffer: f32 logits for the vocabulary, one row per sequence, on the host;
- the compute buffer: no closed form (`graph_reserve` at `n_ubatch`), fitted to
  llama.cpp's own reports (`core.load.llama_cpp_compute`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from core.errors import UsageError
from core.gguf.record import GgufModel
from core.load.llama_cpp_compute import compute_terms
from core.load.llama_cpp_flags import FlashAttn as FlashAttn
from core.load.llama_cpp_flags import KvCacheType as KvCacheType
from core.load.llama_cpp_hparams import GgufTensor, LlamaHparams, layer_of, read_hparams
from core.load.load import (
    DeviceShare,
    EngineLoad,
    LoadEngine,
    LoadTerm,
    Origin,
    Placement,
    Sourced,
    TermKind,
)

CTX_PAD = 256
"""llama.cpp pads `n_ctx` (and each sequence's share) to 256 cells (`llama-context.cpp`)."""
F32_BYTES = 4


@dataclass(frozen=True)
class LlamaCppOptions:
    """llama.cpp's flags that change its memory, under llama.cpp's own long names."""

    n_gpu_layers: int = -1
    """`--n-gpu-layers`: layers offloaded from the last (the output layer counts); -1 all."""
    cache_type_k: KvCacheType = KvCacheType.F16
    cache_type_v: KvCacheType = KvCacheType.F16
    parallel: int = 1
    """`--parallel`: sequences (server slots) decoded at once."""
    ubatch_size: int = 512
    batch_size: int = 2048
    flash_attn: FlashAttn = FlashAttn.ON
    kv_unified: bool = False
    """`--kv-unified`: one cache shared by the sequences instead of one stream each."""
    kv_offload: bool = True
    """False is `--no-kv-offload`: the whole KV cache on the host."""
    swa_full: bool = False
    """`--swa-full`: sliding-window layers sized for the full context."""

    def __post_init__(self) -> None:
        if self.n_gpu_layers < -1:
            raise UsageError("--n-gpu-layers", f"{self.n_gpu_layers} is below -1")
        if self.parallel < 1:
            raise UsageError("--parallel", f"{self.parallel} is below 1")
        if self.ubatch_size < 1 or self.batch_size < 1:
            raise UsageError("--ubatch-size", "batch sizes must be at least 1")
        if self.cache_type_v.is_quantized and self.flash_attn is FlashAttn.OFF:
            # llama.cpp refuses it too: "quantized V cache requires flash_attn to be enabled".
            raise UsageError(
                "--cache-type-v",
                f"a quantized V cache ({self.cache_type_v.value}) needs --flash-attn on",
            )


LLAMA_SERVER_DEFAULTS = LlamaCppOptions(parallel=4, kv_unified=True)
"""llama-server's own defaults: `--parallel` left to auto is 4 slots sharing one unified
cache (tools/server/server.cpp: "n_parallel is set to auto, using n_parallel = 4 and
kv_unified = true"); llama-cli and llama-completion use 1 sequence."""


def pad(value: int, to: int) -> int:
    """`GGML_PAD`: `value` rounded up to a multiple of `to`."""
    return (value + to - 1) // to * to


@dataclass(frozen=True)
class ContextCells:
    """How llama.cpp sizes the context for a `--ctx-size` (`llama_context`'s constructor)."""

    n_ctx: int
    n_ctx_seq: int
    """Cells per stream: the whole context when unified, else each sequence's share."""
    n_stream: int
    n_ubatch: int

    @classmethod
    def of(cls, tokens: int, options: LlamaCppOptions) -> ContextCells:
        # n_batch is bounded by the context before the context is padded.
        n_batch = min(tokens, options.batch_size)
        n_ubatch = min(n_batch, options.ubatch_size)
        n_ctx = pad(tokens, CTX_PAD)
        if options.kv_unified:
            return cls(n_ctx, n_ctx, 1, n_ubatch)
        n_ctx_seq = pad(n_ctx // options.parallel, CTX_PAD)
        return cls(n_ctx_seq * options.parallel, n_ctx_seq, options.parallel, n_ubatch)

    def swa_cells(self, n_swa: int, options: LlamaCppOptions) -> int:
        """A sliding-window layer's cells per stream (`llama-kv-cache-iswa.cpp`)."""
        if options.swa_full:
            return self.n_ctx_seq
        seqs = options.parallel if options.kv_unified else 1
        return pad(min(self.n_ctx_seq, n_swa * seqs + self.n_ubatch), CTX_PAD)


@dataclass(frozen=True)
class LayerWeights:
    """The tensors' bytes per llama.cpp layer: -1 the input, `n_layer` the output."""

    by_layer: Mapping[int, int]
    tied_output_bytes: int
    """`token_embd.weight`'s bytes when it doubles as the output (no `output.weight`)."""

    @property
    def total(self) -> int:
        return sum(self.by_layer.values())


def layer_weights(tensors: Sequence[GgufTensor], hp: LlamaHparams) -> LayerWeights:
    by_layer: dict[int, int] = {}
    names = set()
    embd = 0
    for t in tensors:
        il = layer_of(t.name, hp.n_layer, hp.arch)
        by_layer[il] = by_layer.get(il, 0) + t.nbytes
        names.add(t.name)
        if t.name == "token_embd.weight":
            embd = t.nbytes
    tied = embd if "output.weight" not in names else 0
    return LayerWeights(by_layer, tied)


@dataclass(frozen=True)
class LlamaCppPlan:
    """One GGUF under llama.cpp with one set of flags: `at(tokens)` is arithmetic."""

    hparams: LlamaHparams
    weights: LayerWeights
    options: LlamaCppOptions = field(default_factory=LlamaCppOptions)
    notes: tuple[str, ...] = ()
    projector_bytes: int = 0
    """An `mmproj` file's tensors, loaded beside the model (on the device when any layer
    is offloaded, as mtmd offloads it by default)."""

    @property
    def engine(self) -> LoadEngine:
        return LoadEngine.LLAMA_CPP

    @property
    def sources(self) -> tuple[Sourced, ...]:
        o = self.options
        return (
            *self.hparams.sources,
            Sourced("n_vocab", self.hparams.n_vocab, Origin.GGUF, "tokenizer.ggml.tokens"),
            Sourced("n_gpu_layers", o.n_gpu_layers, Origin.SETTING, "--n-gpu-layers"),
            Sourced("parallel", o.parallel, Origin.SETTING, "--parallel"),
            Sourced("ubatch_size", o.ubatch_size, Origin.SETTING, "--ubatch-size"),
        )

    def with_options(self, options: LlamaCppOptions) -> LlamaCppPlan:
        return replace(self, options=options)

    @property
    def offloaded_layers(self) -> int:
        """How many of llama.cpp's `n_layer + 1` layers are on the device."""
        n = self.options.n_gpu_layers
        total = self.hparams.n_layer + 1
        return total if n < 0 else min(n, total)

    def on_device(self, il: int) -> bool:
        """Whether layer `il` (0..n_layer, the output layer last) is offloaded."""
        if il < 0:
            return False
        return il >= self.hparams.n_layer + 1 - self.offloaded_layers

    def at(self, tokens: int) -> EngineLoad:
        if tokens < 1:
            raise UsageError("--ctx-size", f"{tokens} tokens: the context must be at least 1")
        hp, o = self.hparams, self.options
        if hp.is_mla and o.cache_type_k is not o.cache_type_v:
            # llama.cpp refuses it: "model does not support different K and V cache types".
            raise UsageError(
                "--cache-type-v",
                f"{hp.arch} (MLA) needs the same K and V cache types, not "
                f"{o.cache_type_k.value} and {o.cache_type_v.value}",
            )
        cells = ContextCells.of(tokens, o)
        device: list[LoadTerm] = []
        host: list[LoadTerm] = []
        terms: list[LoadTerm] = []

        def put(term: LoadTerm, on_device: bool) -> None:
            (device if on_device else host).append(term)

        # Weights, each layer where llama.cpp puts it.
        dev_w = sum(b for il, b in self.weights.by_layer.items() if self.on_device(il))
        host_w = self.weights.total - dev_w
        n_off = self.offloaded_layers
        detail = f"{n_off} of {hp.n_layer + 1} layers offloaded (the output layer counts)"
        terms.append(
            LoadTerm(TermKind.WEIGHTS, self.weights.total, Origin.GGUF, "every tensor's bytes")
        )
        put(LoadTerm(TermKind.WEIGHTS, dev_w, Origin.GGUF, detail), True)
        put(
            LoadTerm(
                TermKind.WEIGHTS,
                host_w,
                Origin.GGUF,
                "the token embeddings and the layers left on the host",
            ),
            False,
        )
        if self.weights.tied_output_bytes and self.on_device(hp.n_layer):
            dup = LoadTerm(
                TermKind.WEIGHTS,
                self.weights.tied_output_bytes,
                Origin.ENGINE_RULE,
                "token_embd.weight duplicated as the output on the device (tied embeddings)",
            )
            terms.append(dup)
            put(dup, True)

        # The KV cache and the recurrent state, layer by layer.
        for term, il_on_device in self._kv_terms(cells):
            terms.append(term)
            put(term, il_on_device)

        out = LoadTerm(
            TermKind.OUTPUT,
            hp.n_vocab * o.parallel * F32_BYTES,
            Origin.ENGINE_RULE,
            f"f32 logits: {hp.n_vocab:,} tokens x {o.parallel} sequence(s), on the host",
        )
        terms.append(out)
        put(out, False)

        if self.projector_bytes:
            proj = LoadTerm(
                TermKind.PROJECTOR,
                self.projector_bytes,
                Origin.GGUF,
                "the mmproj file's tensors (its own compute buffer not counted)",
            )
            terms.append(proj)
            put(proj, n_off > 0)

        for comp, comp_on_device in compute_terms(
            hp,
            o.flash_attn is FlashAttn.ON,
            cells.n_ctx_seq,
            cells.swa_cells(hp.n_swa, o) if hp.n_swa else 0,
            cells.n_ubatch,
            offloaded=n_off > 0,
            host_kv=self._widest_cache(cells, on_device=False),
            device_kv=self._widest_cache(cells, on_device=True),
        ):
            terms.append(comp)
            put(comp, comp_on_device)

        shares = tuple(
            DeviceShare(p, tuple(t for t in ts if t.bytes))
            for p, ts in ((Placement.DEVICE, device), (Placement.HOST, host))
            if n_off > 0 or p is Placement.HOST
        )
        return EngineLoad(
            engine=LoadEngine.LLAMA_CPP,
            tokens=tokens,
            terms=tuple(t for t in terms if t.bytes),
            sources=self.sources,
            notes=self.notes,
            shares=shares,
        )

    def _widest_cache(self, cells: ContextCells, on_device: bool) -> int | None:
        """The most cells any repeating layer on that place attends over (0 for a
        recurrent layer; None when the place runs no repeating layer)."""
        hp, o = self.hparams, self.options
        widest: int | None = None
        for il in range(hp.n_layer):
            if self.on_device(il) is not on_device:
                continue
            if hp.is_recr[il]:
                n = 0
            elif hp.is_swa[il]:
                n = cells.swa_cells(hp.n_swa, o)
            else:
                n = cells.n_ctx_seq
            widest = n if widest is None else max(widest, n)
        return widest

    def kv_parts(self, tokens: int) -> tuple[int, int, int]:
        """The attention K bytes, V bytes and recurrent state bytes at `tokens`."""
        cells = ContextCells.of(tokens, self.options)
        k = v = r = 0
        for il in range(self.hparams.n_layer):
            dk, dv, dr = self._layer_kv(il, cells)
            k, v, r = k + dk, v + dv, r + dr
        return k, v, r

    def _layer_kv(self, il: int, cells: ContextCells) -> tuple[int, int, int]:
        hp, o = self.hparams, self.options
        if hp.is_recr[il]:
            rows = max(1, o.parallel)
            return 0, 0, (hp.n_embd_r + hp.n_embd_s) * F32_BYTES * rows
        if hp.is_recurrent:
            return 0, 0, 0
        n_cells = cells.swa_cells(hp.n_swa, o) if hp.is_swa[il] else cells.n_ctx_seq
        n_cells *= cells.n_stream
        k = o.cache_type_k.row_bytes(hp.n_embd_k_gqa(il)) * n_cells
        if hp.is_mla:
            return k, 0, 0
        if o.flash_attn is FlashAttn.ON:
            v_values = hp.n_embd_v_gqa(il)
        else:
            # A transposed V (no flash attention) is padded to the widest layer's V.
            v_values = max(hp.n_embd_v_gqa(j) for j in range(hp.n_layer))
        return k, o.cache_type_v.row_bytes(v_values) * n_cells, 0

    def _kv_terms(self, cells: ContextCells) -> list[tuple[LoadTerm, bool]]:
        """The cache as terms: full-attention layers, sliding-window layers, recurrent
        state, each split between the device and the host by its layers' places."""
        hp, o = self.hparams, self.options
        groups: dict[tuple[str, bool], int] = {}
        for il in range(hp.n_layer):
            k, v, r = self._layer_kv(il, cells)
            group = "recurrent" if hp.is_recr[il] else ("swa" if hp.is_swa[il] else "full")
            on_dev = o.kv_offload and self.on_device(il)
            key = (group, on_dev)
            groups[key] = groups.get(key, 0) + k + v + r
        out: list[tuple[LoadTerm, bool]] = []
        types = f"K {o.cache_type_k.value}, V {o.cache_type_v.value}"
        if hp.is_mla:
            types = f"K {o.cache_type_k.value} (MLA: no V)"
        words = {
            "full": f"{cells.n_ctx_seq:,} cells x {cells.n_stream} stream(s), {types}",
            "swa": (
                f"sliding window {hp.n_swa:,}: {cells.swa_cells(hp.n_swa, o):,} cells"
                f" x {cells.n_stream} stream(s), {types}"
            ),
            "recurrent": f"conv and SSM state, f32, {max(1, o.parallel)} sequence(s)",
        }
        for (group, on_dev), size in sorted(groups.items()):
            where = "device" if on_dev else "host"
            out.append(
                (
                    LoadTerm(TermKind.KV, size, Origin.ENGINE_RULE, f"{words[group]} ({where})"),
                    on_dev,
                )
            )
        return out


def plan_for_gguf(
    metadata: Mapping[str, object],
    tensors: Sequence[GgufTensor],
    where: str,
    options: LlamaCppOptions | None = None,
) -> LlamaCppPlan:
    """The llama.cpp plan for one GGUF's metadata and tensor infos (`where` names it in errors)."""
    hp, notes = read_hparams(metadata, tensors, where)
    return LlamaCppPlan(hp, layer_weights(tensors, hp), options or LlamaCppOptions(), notes)


def plan_for_model(model: GgufModel, options: LlamaCppOptions | None = None) -> LlamaCppPlan:
    """The llama.cpp plan for a GGUF model as `core.gguf` read it (every split part's
    tensors; a projector beside it counted as its weights)."""
    plan = plan_for_gguf(model.metadata, model.tensors, model.first.path, options)
    if model.projector is not None:
        plan = replace(plan, projector_bytes=model.projector.tensor_bytes)
    return plan


def largest_gpu_layers(plan: LlamaCppPlan, tokens: int, budget_bytes: int) -> int:
    """The largest `--n-gpu-layers` whose device share at `tokens` fits `budget_bytes`:
    `n_layer + 1` when everything fits, 0 when not even the output layer does (llama.cpp
    then runs on the host alone)."""
    for n in range(plan.hparams.n_layer + 1, 0, -1):
        load = plan.with_options(replace(plan.options, n_gpu_layers=n)).at(tokens)
        if load.device_bytes <= budget_bytes:
            return n
    return 0


def largest_context(plan: LlamaCppPlan, budget_bytes: int, ceiling: int) -> int | None:
    """The largest `--ctx-size` up to `ceiling` whose device share fits `budget_bytes`
    (the whole load when nothing is offloaded); None when not even 1 token fits.

    The load only grows with the context (cells are padded up to 256, never down), so a
    bisection over the tokens finds it in about 20 steps of arithmetic.
    """

    def fits(tokens: int) -> bool:
        load = plan.at(tokens)
        held = load.device_bytes if plan.offloaded_layers else load.total_bytes
        return held <= budget_bytes

    if ceiling < 1 or not fits(1):
        return None
    low, high = 1, ceiling
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low
