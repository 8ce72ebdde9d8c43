"""Small but real GGUF models, written with gguf-py's `GGUFWriter` (no download).

Each model carries the metadata keys and the tensors (names, ggml shapes, types) that
the llama.cpp vendored by llama-cpp-python 0.3.36 requires of its architecture
(`src/models/<arch>.cpp`: `load_arch_hparams`, `load_arch_tensors`; the loader refuses a
file with a tensor it did not ask for, so only those are written), and a minimal
SentencePiece vocabulary llama.cpp accepts (`<unk>`, `<s>`, `</s>`, the 256 byte tokens,
then filler pieces). The tensor data is a sparse hole: zeros, which are valid F32, F16,
Q8_0 and Q4_0 blocks (a zero scale), so a file weighs its true size on the disk's
accounting but takes a few KiB.

`gguf_layout(arch)` says what a model holds; `write_gguf(path, layout)` writes it, whole
or split as `gguf-split` names the parts (`NAME-00001-of-00003.gguf`, the first holding
the metadata, each `split.no`, `split.count`, `split.tensors.count`); `write_mmproj`
writes a CLIP projector as llama.cpp's `mmproj-*.gguf` files are laid out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gguf
from gguf import GGMLQuantizationType as QType
from gguf import GGUFValueType as VType

ARCHITECTURES = (
    "llama",
    "qwen2",
    "qwen3",
    "qwen3moe",
    "gemma2",
    "gemma3",
    "phi3",
    "deepseek2",
    "lfm2",
)
"""Every architecture `gguf_layout` writes: the issue's eight and one hybrid (LFM2:
short-convolution layers with a recurrent state beside attention layers)."""

WEIGHT_TYPES = {
    "F32": QType.F32,
    "F16": QType.F16,
    "Q8_0": QType.Q8_0,
    "Q4_0": QType.Q4_0,
}
"""The tensor types a model's matrices may be written in (`general.file_type` to match)."""
_FILE_TYPE = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 7}  # llama.cpp's LLAMA_FTYPE_*


@dataclass(frozen=True)
class GgufTensor:
    """One tensor: its name, shape in ggml's order (`ne0` first, as llama.cpp's
    `create_tensor` writes it) and type."""

    name: str
    shape: tuple[int, ...]
    type: QType

    @property
    def nbytes(self) -> int:
        """`ggml_nbytes`: rows of `ne0 / block` blocks."""
        block, type_size = gguf.GGML_QUANT_SIZES[self.type]
        count = 1
        for dim in self.shape[1:]:
            count *= dim
        return self.shape[0] // block * type_size * count


@dataclass(frozen=True)
class MetaValue:
    """One metadata value and its GGUF type (`sub` for an array's items)."""

    value: Any
    type: VType
    sub: VType | None = None


@dataclass(frozen=True)
class GgufLayout:
    """What one synthesized model holds: its metadata (in order) and tensors (in order)."""

    arch: str
    metadata: tuple[tuple[str, MetaValue], ...]
    tensors: tuple[GgufTensor, ...]

    @property
    def weights_bytes(self) -> int:
        """The sum of the tensors' bytes (without the alignment padding between them)."""
        return sum(t.nbytes for t in self.tensors)

    def value(self, key: str) -> Any:
        """The metadata value of `key` (KeyError when absent)."""
        for name, meta in self.metadata:
            if name == key:
                return meta.value
        raise KeyError(key)

    def with_metadata(self, key: str, meta: MetaValue | None) -> GgufLayout:
        """The layout with `key` set to `meta` (appended if new), or removed for None."""
        items = [(k, m) for k, m in self.metadata if k != key]
        if meta is not None:
            items.append((key, meta))
        return replace(self, metadata=tuple(items))


def _u32(value: int) -> MetaValue:
    return MetaValue(value, VType.UINT32)


def _f32(value: float) -> MetaValue:
    return MetaValue(value, VType.FLOAT32)


def _str(value: str) -> MetaValue:
    return MetaValue(value, VType.STRING)


def _arr(values: Sequence[Any], sub: VType) -> MetaValue:
    return MetaValue(list(values), VType.ARRAY, sub)


def vocabulary(n_vocab: int) -> list[tuple[str, MetaValue]]:
    """A SentencePiece (`llama`) vocabulary of `n_vocab` pieces llama.cpp loads: the
    three specials, every byte token (llama.cpp requires all 256), `<|endoftext|>`, then
    filler pieces."""
    if n_vocab < 3 + 256 + 1:
        raise ValueError(f"a vocabulary needs at least 260 pieces, not {n_vocab}")
    # `<|endoftext|>`: llama.cpp looks it up by name for a model named phi3.
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["<|endoftext|>"]
    tokens += [f"\u2581t{i}" for i in range(n_vocab - len(tokens))]
    # llama_token_type: 2 unknown, 3 control, 6 byte, 1 normal.
    types = [2, 3, 3] + [6] * 256 + [3] + [1] * (n_vocab - 260)
    scores = [0.0] * 260 + [-float(i) for i in range(n_vocab - 260)]
    return [
        ("tokenizer.ggml.model", _str("llama")),
        ("tokenizer.ggml.tokens", _arr(tokens, VType.STRING)),
        ("tokenizer.ggml.scores", _arr(scores, VType.FLOAT32)),
        ("tokenizer.ggml.token_type", _arr(types, VType.INT32)),
        ("tokenizer.ggml.bos_token_id", _u32(1)),
        ("tokenizer.ggml.eos_token_id", _u32(2)),
        ("tokenizer.ggml.unknown_token_id", _u32(0)),
    ]


@dataclass(frozen=True)
class Dims:
    """A model's sizes (tiny by default: every matrix row a whole number of Q4_0 blocks)."""

    n_embd: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int = 32
    n_ff: int = 256
    n_vocab: int = 512
    n_ctx_train: int = 4096
    n_expert: int = 8
    n_expert_used: int = 2
    n_ff_exp: int = 64
    n_swa: int = 512


class _Builder:
    """Collects one model's metadata and tensors in the order a converter writes them."""

    def __init__(self, arch: str, dims: Dims, weight_type: QType) -> None:
        self.arch = arch
        self.dims = dims
        self.weight_type = weight_type
        self.metadata: list[tuple[str, MetaValue]] = []
        self.tensors: list[GgufTensor] = []

    def key(self, suffix: str, meta: MetaValue) -> None:
        self.metadata.append((f"{self.arch}.{suffix}", meta))

    def matrix(self, name: str, *shape: int) -> None:
        """A weight: the model's type when its rows hold whole blocks, else F32."""
        block, _ = gguf.GGML_QUANT_SIZES[self.weight_type]
        kind = self.weight_type if shape[0] % block == 0 else QType.F32
        self.tensors.append(GgufTensor(name, tuple(shape), kind))

    def vector(self, name: str, *shape: int) -> None:
        """A norm, bias or other small tensor: always F32, as converters keep them."""
        self.tensors.append(GgufTensor(name, tuple(shape), QType.F32))

    def common(self, *, head_count_kv: MetaValue | None = None) -> None:
        d = self.dims
        self.key("context_length", _u32(d.n_ctx_train))
        self.key("embedding_length", _u32(d.n_embd))
        self.key("block_count", _u32(d.n_layer))
        self.key("feed_forward_length", _u32(d.n_ff))
        self.key("attention.head_count", _u32(d.n_head))
        self.key("attention.head_count_kv", head_count_kv or _u32(d.n_head_kv))
        self.key("attention.layer_norm_rms_epsilon", _f32(1e-6))
        self.key("rope.freq_base", _f32(10000.0))

    def embeddings(self, *, output: bool = True, norm_name: str = "output_norm") -> None:
        d = self.dims
        self.matrix("token_embd.weight", d.n_embd, d.n_vocab)
        self.vector(f"{norm_name}.weight", d.n_embd)
        if output:
            self.matrix("output.weight", d.n_embd, d.n_vocab)

    def attention(self, i: int, *, q_dim: int, kv_dim: int, bias: bool = False) -> None:
        d = self.dims
        self.vector(f"blk.{i}.attn_norm.weight", d.n_embd)
        self.matrix(f"blk.{i}.attn_q.weight", d.n_embd, q_dim)
        self.matrix(f"blk.{i}.attn_k.weight", d.n_embd, kv_dim)
        self.matrix(f"blk.{i}.attn_v.weight", d.n_embd, kv_dim)
        if bias:
            self.vector(f"blk.{i}.attn_q.bias", q_dim)
            self.vector(f"blk.{i}.attn_k.bias", kv_dim)
            self.vector(f"blk.{i}.attn_v.bias", kv_dim)
        self.matrix(f"blk.{i}.attn_output.weight", q_dim, d.n_embd)

    def dense_ffn(self, i: int) -> None:
        d = self.dims
        self.vector(f"blk.{i}.ffn_norm.weight", d.n_embd)
        self.matrix(f"blk.{i}.ffn_gate.weight", d.n_embd, d.n_ff)
        self.matrix(f"blk.{i}.ffn_down.weight", d.n_ff, d.n_embd)
        self.matrix(f"blk.{i}.ffn_up.weight", d.n_embd, d.n_ff)

    def expert_ffn(self, i: int) -> None:
        d = self.dims
        self.matrix(f"blk.{i}.ffn_gate_inp.weight", d.n_embd, d.n_expert)
        self.matrix(f"blk.{i}.ffn_gate_exps.weight", d.n_embd, d.n_ff_exp, d.n_expert)
        self.matrix(f"blk.{i}.ffn_down_exps.weight", d.n_ff_exp, d.n_embd, d.n_expert)
        self.matrix(f"blk.{i}.ffn_up_exps.weight", d.n_embd, d.n_ff_exp, d.n_expert)

    def layout(self, file_type: int) -> GgufLayout:
        head = [
            ("general.architecture", _str(self.arch)),
            ("general.name", _str(f"vramscope tiny {self.arch}")),
            ("general.file_type", _u32(file_type)),
            ("general.quantization_version", _u32(2)),
        ]
        return GgufLayout(
            self.arch,
            tuple(head + self.metadata + vocabulary(self.dims.n_vocab)),
            tuple(self.tensors),
        )


def _llama(b: _Builder) -> None:
    d = b.dims
    b.common()
    b.key("rope.dimension_count", _u32(d.n_embd // d.n_head))
    b.embeddings()
    for i in range(d.n_layer):
        b.attention(i, q_dim=d.n_embd, kv_dim=d.n_embd // d.n_head * d.n_head_kv)
        b.dense_ffn(i)


def _qwen2(b: _Builder) -> None:
    d = b.dims
    b.common()
    b.embeddings()
    for i in range(d.n_layer):
        b.attention(i, q_dim=d.n_embd, kv_dim=d.n_embd // d.n_head * d.n_head_kv, bias=True)
        b.dense_ffn(i)


def _qk_norms(b: _Builder, i: int) -> None:
    b.vector(f"blk.{i}.attn_k_norm.weight", b.dims.head_dim)
    b.vector(f"blk.{i}.attn_q_norm.weight", b.dims.head_dim)


def _qwen3(b: _Builder) -> None:
    d = b.dims
    b.common()
    b.key("attention.key_length", _u32(d.head_dim))
    b.key("attention.value_length", _u32(d.head_dim))
    b.embeddings(output=False)  # tied, as Qwen3's small models are
    for i in range(d.n_layer):
        b.attention(i, q_dim=d.head_dim * d.n_head, kv_dim=d.head_dim * d.n_head_kv)
        _qk_norms(b, i)
        b.vector(f"blk.{i}.ffn_norm.weight", d.n_embd)
        b.matrix(f"blk.{i}.ffn_gate.weight", d.n_embd, d.n_ff)
        b.matrix(f"blk.{i}.ffn_down.weight", d.n_ff, d.n_embd)
        b.matrix(f"blk.{i}.ffn_up.weight", d.n_embd, d.n_ff)


def _qwen3moe(b: _Builder) -> None:
    d = b.dims
    b.common()
    b.key("attention.key_length", _u32(d.head_dim))
    b.key("attention.value_length", _u32(d.head_dim))
    b.key("expert_count", _u32(d.n_expert))
    b.key("expert_used_count", _u32(d.n_expert_used))
    b.key("expert_feed_forward_length", _u32(d.n_ff_exp))
    b.embeddings()
    for i in range(d.n_layer):
        b.attention(i, q_dim=d.head_dim * d.n_head, kv_dim=d.head_dim * d.n_head_kv)
        _qk_norms(b, i)
        b.vector(f"blk.{i}.ffn_norm.weight", d.n_embd)
        b.expert_ffn(i)


def _gemma(b: _Builder, *, qk_norm: bool) -> None:
    d = b.dims
    b.common()
    b.key("attention.key_length", _u32(d.head_dim))
    b.key("attention.value_length", _u32(d.head_dim))
    b.key("attention.sliding_window", _u32(d.n_swa))
    if qk_norm:
        b.key("rope.freq_base_swa", _f32(10000.0))
    else:
        b.key("attn_logit_softcapping", _f32(50.0))
        b.key("final_logit_softcapping", _f32(30.0))
    b.embeddings(output=False)  # Gemma ties the output to the embeddings
    for i in range(d.n_layer):
        b.attention(i, q_dim=d.head_dim * d.n_head, kv_dim=d.head_dim * d.n_head_kv)
        b.vector(f"blk.{i}.post_attention_norm.weight", d.n_embd)
        if qk_norm:
            _qk_norms(b, i)
        b.dense_ffn(i)
        b.vector(f"blk.{i}.post_ffw_norm.weight", d.n_embd)


def _phi3(b: _Builder) -> None:
    d = b.dims
    b.common()
    b.key("rope.dimension_count", _u32(d.n_embd // d.n_head))
    b.embeddings()
    kv_dim = d.n_embd // d.n_head * d.n_head_kv
    for i in range(d.n_layer):
        b.vector(f"blk.{i}.attn_norm.weight", d.n_embd)
        b.matrix(f"blk.{i}.attn_qkv.weight", d.n_embd, d.n_embd + 2 * kv_dim)
        b.matrix(f"blk.{i}.attn_output.weight", d.n_embd, d.n_embd)
        b.vector(f"blk.{i}.ffn_norm.weight", d.n_embd)
        b.matrix(f"blk.{i}.ffn_down.weight", d.n_ff, d.n_embd)
        b.matrix(f"blk.{i}.ffn_up.weight", d.n_embd, 2 * d.n_ff)


DEEPSEEK2_MLA = {"q_lora_rank": 64, "kv_lora_rank": 64, "rope": 32, "nope": 32, "v_head": 32}
"""The tiny DeepSeek's attention: MLA as llama.cpp converts it (K cache = the latent and
the rope part, `key_length` 96 on one KV head; no V cache)."""


def _deepseek2(b: _Builder) -> None:
    d = b.dims
    m = DEEPSEEK2_MLA
    b.common(head_count_kv=_u32(1))
    b.key("leading_dense_block_count", _u32(1))
    b.key("attention.q_lora_rank", _u32(m["q_lora_rank"]))
    b.key("attention.kv_lora_rank", _u32(m["kv_lora_rank"]))
    b.key("attention.key_length", _u32(m["kv_lora_rank"] + m["rope"]))
    b.key("attention.value_length", _u32(m["kv_lora_rank"]))
    b.key("attention.key_length_mla", _u32(m["nope"] + m["rope"]))
    b.key("attention.value_length_mla", _u32(m["v_head"]))
    b.key("rope.dimension_count", _u32(m["rope"]))
    b.key("expert_count", _u32(d.n_expert))
    b.key("expert_used_count", _u32(d.n_expert_used))
    b.key("expert_feed_forward_length", _u32(d.n_ff_exp))
    b.key("expert_shared_count", _u32(1))
    b.key("expert_weights_scale", _f32(2.5))
    b.key("expert_weights_norm", MetaValue(True, VType.BOOL))
    b.key("expert_gating_func", _u32(2))  # sigmoid, as DeepSeek-V3
    b.embeddings()
    k_mla = m["nope"] + m["rope"]
    for i in range(d.n_layer):
        b.vector(f"blk.{i}.attn_norm.weight", d.n_embd)
        b.vector(f"blk.{i}.attn_q_a_norm.weight", m["q_lora_rank"])
        b.vector(f"blk.{i}.attn_kv_a_norm.weight", m["kv_lora_rank"])
        b.matrix(f"blk.{i}.attn_q_a.weight", d.n_embd, m["q_lora_rank"])
        b.matrix(f"blk.{i}.attn_q_b.weight", m["q_lora_rank"], d.n_head * k_mla)
        b.matrix(f"blk.{i}.attn_kv_a_mqa.weight", d.n_embd, m["kv_lora_rank"] + m["rope"])
        b.matrix(f"blk.{i}.attn_k_b.weight", m["nope"], m["kv_lora_rank"], d.n_head)
        b.matrix(f"blk.{i}.attn_v_b.weight", m["kv_lora_rank"], m["v_head"], d.n_head)
        b.matrix(f"blk.{i}.attn_output.weight", d.n_head * m["v_head"], d.n_embd)
        if i == 0:
            b.dense_ffn(i)
            continue
        b.vector(f"blk.{i}.ffn_norm.weight", d.n_embd)
        b.expert_ffn(i)
        b.vector(f"blk.{i}.exp_probs_b.bias", d.n_expert)
        b.matrix(f"blk.{i}.ffn_gate_shexp.weight", d.n_embd, d.n_ff_exp)
        b.matrix(f"blk.{i}.ffn_down_shexp.weight", d.n_ff_exp, d.n_embd)
        b.matrix(f"blk.{i}.ffn_up_shexp.weight", d.n_embd, d.n_ff_exp)


LFM2_ATTENTION_LAYERS = (2, 5)
"""Which of the tiny LFM2's six layers are attention (the rest short convolutions)."""
LFM2_CONV_CACHE = 3


def _lfm2(b: _Builder) -> None:
    d = b.dims
    kv = [d.n_head_kv if i in LFM2_ATTENTION_LAYERS else 0 for i in range(d.n_layer)]
    b.common(head_count_kv=_arr(kv, VType.INT32))
    b.key("shortconv.l_cache", _u32(LFM2_CONV_CACHE))
    b.embeddings(output=False, norm_name="token_embd_norm")
    head = d.n_embd // d.n_head
    for i in range(d.n_layer):
        b.dense_ffn(i)
        if kv[i]:
            _qk_norms(b, i)
            b.attention(i, q_dim=d.n_embd, kv_dim=head * kv[i])
        else:
            b.vector(f"blk.{i}.attn_norm.weight", d.n_embd)
            b.vector(f"blk.{i}.shortconv.conv.weight", LFM2_CONV_CACHE, d.n_embd)
            b.matrix(f"blk.{i}.shortconv.in_proj.weight", d.n_embd, 3 * d.n_embd)
            b.matrix(f"blk.{i}.shortconv.out_proj.weight", d.n_embd, d.n_embd)


_BUILDERS = {
    "llama": (_llama, Dims()),
    "qwen2": (_qwen2, Dims()),
    "qwen3": (_qwen3, Dims(head_dim=64)),
    "qwen3moe": (_qwen3moe, Dims(head_dim=64)),
    "gemma2": (lambda b: _gemma(b, qk_norm=False), Dims(head_dim=64)),
    "gemma3": (lambda b: _gemma(b, qk_norm=True), Dims(head_dim=64, n_layer=6)),
    "phi3": (_phi3, Dims(n_head_kv=4)),
    "deepseek2": (_deepseek2, Dims(n_layer=3)),
    "lfm2": (_lfm2, Dims(n_layer=6)),
}


def gguf_layout(
    arch: str, *, weight_type: str = "Q8_0", n_ctx_train: int | None = None, **dims: int
) -> GgufLayout:
    """The tiny model of `arch` with matrices in `weight_type` (F32, F16, Q8_0, Q4_0);
    `dims` overrides `Dims` fields (`n_layer=8`, `n_vocab=1024`)."""
    build, base = _BUILDERS[arch]
    sizes = replace(base, **dims)
    if n_ctx_train is not None:
        sizes = replace(sizes, n_ctx_train=n_ctx_train)
    builder = _Builder(arch, sizes, WEIGHT_TYPES[weight_type])
    build(builder)
    return builder.layout(_FILE_TYPE[weight_type])


def split_names(path: Path, count: int) -> list[Path]:
    """The parts of a split model as `gguf-split` and llama.cpp name them."""
    stem = path.name.removesuffix(".gguf")
    return [path.with_name(f"{stem}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]


def write_gguf(path: Path, layout: GgufLayout, *, split: int = 1) -> list[Path]:
    """Write `layout` at `path` (or as `split` parts beside it); returns the files.

    The header, metadata and tensor infos are written by `GGUFWriter`; each file is then
    extended over a sparse hole to where its last tensor's padded bytes end.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    per_part = -(-len(layout.tensors) // split)
    writer = gguf.GGUFWriter(path, layout.arch, split_max_tensors=per_part if split > 1 else 0)
    for key, meta in layout.metadata:
        if key == "general.architecture":
            continue  # GGUFWriter writes it first itself
        writer.add_key_value(key, meta.value, meta.type, meta.sub)
    import numpy as np

    for tensor in layout.tensors:
        # GGUFWriter takes numpy's order (it reverses it back) in bytes for a raw type.
        byte_shape = gguf.quant_shape_to_byte_shape(tuple(reversed(tensor.shape)), tensor.type)
        writer.add_tensor_info(
            tensor.name, byte_shape, np.dtype(np.uint8), tensor.nbytes, raw_dtype=tensor.type
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    assert writer.fout is not None
    files = writer.format_shard_names(path)
    for fout, tensors in zip(writer.fout, writer.tensors, strict=True):
        start = gguf.GGUFWriter.ggml_pad(fout.tell(), writer.data_alignment)
        data = sum(
            gguf.GGUFWriter.ggml_pad(t.nbytes, writer.data_alignment) for t in tensors.values()
        )
        fout.truncate(start + data)
    writer.close()
    return files


def write_model(
    dest: Path, arch: str, *, weight_type: str = "Q8_0", split: int = 1, **dims: int
) -> list[Path]:
    """A tiny `arch` model written into the folder `dest` (made if missing) as
    `<arch>-<type>.gguf`, or its parts; returns the files."""
    dest.mkdir(parents=True, exist_ok=True)
    layout = gguf_layout(arch, weight_type=weight_type, **dims)
    return write_gguf(dest / f"{arch}-{weight_type}.gguf", layout, split=split)


def mmproj_layout(*, n_embd: int = 64, n_layer: int = 2, projection_dim: int = 128) -> GgufLayout:
    """A CLIP vision projector as llama.cpp's `mmproj-*.gguf` files hold it (mtmd's
    `clip.cpp` key and tensor names): a ViT of `n_layer` blocks and a 2-layer MLP."""
    image, patch = 224, 14
    n_patches = (image // patch) ** 2
    meta: list[tuple[str, MetaValue]] = [
        ("general.architecture", _str("clip")),
        ("general.file_type", _u32(1)),
        ("clip.has_vision_encoder", MetaValue(True, VType.BOOL)),
        ("clip.projector_type", _str("mlp")),
        ("clip.vision.image_size", _u32(image)),
        ("clip.vision.patch_size", _u32(patch)),
        ("clip.vision.embedding_length", _u32(n_embd)),
        ("clip.vision.feed_forward_length", _u32(4 * n_embd)),
        ("clip.vision.projection_dim", _u32(projection_dim)),
        ("clip.vision.block_count", _u32(n_layer)),
        ("clip.vision.attention.head_count", _u32(4)),
        ("clip.vision.attention.layer_norm_epsilon", _f32(1e-6)),
        ("clip.vision.image_mean", _arr([0.5, 0.5, 0.5], VType.FLOAT32)),
        ("clip.vision.image_std", _arr([0.5, 0.5, 0.5], VType.FLOAT32)),
    ]
    f16, f32 = QType.F16, QType.F32
    tensors = [
        GgufTensor("v.patch_embd.weight", (patch, patch, 3, n_embd), f16),
        GgufTensor("v.position_embd.weight", (n_embd, n_patches + 1), f16),
        GgufTensor("v.class_embd", (n_embd,), f32),
    ]
    for i in range(n_layer):
        for part in ("attn_q", "attn_k", "attn_v", "attn_out"):
            tensors.append(GgufTensor(f"v.blk.{i}.{part}.weight", (n_embd, n_embd), f16))
            tensors.append(GgufTensor(f"v.blk.{i}.{part}.bias", (n_embd,), f32))
        tensors += [
            GgufTensor(f"v.blk.{i}.ln1.weight", (n_embd,), f32),
            GgufTensor(f"v.blk.{i}.ln2.weight", (n_embd,), f32),
            GgufTensor(f"v.blk.{i}.ffn_up.weight", (n_embd, 4 * n_embd), f16),
            GgufTensor(f"v.blk.{i}.ffn_down.weight", (4 * n_embd, n_embd), f16),
        ]
    tensors += [
        GgufTensor("mm.0.weight", (n_embd, projection_dim), f16),
        GgufTensor("mm.0.bias", (projection_dim,), f32),
        GgufTensor("mm.2.weight", (projection_dim, projection_dim), f16),
        GgufTensor("mm.2.bias", (projection_dim,), f32),
    ]
    return GgufLayout("clip", tuple(meta), tuple(tensors))


def write_mmproj(path: Path, **dims: int) -> Path:
    """A projector file at `path` (name it `mmproj-*.gguf` beside a model)."""
    write_gguf(path, mmproj_layout(**dims))
    return path
