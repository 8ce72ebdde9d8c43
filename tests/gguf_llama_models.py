"""Small GGUF models that the vendored llama.cpp loads, for its memory goldens (#40).

Each model is written with gguf-py's `GGUFWriter` under the tensor names and shapes that
llama.cpp's `load_arch_tensors` asks for (`src/models/<arch>.cpp`), with zeroed data (valid
blocks of every type used; llama.cpp loads it and generates a token from it). Sizes are
small (a few MiB) but not toy shapes: grouped-query heads, quantized matrices (q8_0, q4_0)
beside f16 and f32 ones, a vocabulary of 8,192 (so that the logits count), so that the
tensors' bytes, the KV rows and the block sizes all count.
The same function writes the file that llama.cpp measured (scripts/llama_golden.py) and
the one the tests read, so the golden tables and the tests see one model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

N_VOCAB = 8192


@dataclass(frozen=True)
class Spec:
    """One synthesized model: its architecture and the dimensions llama.cpp reads."""

    arch: str
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int | tuple[int, ...]
    head_dim: int
    n_ff: int
    ctx_train: int = 8192
    matrix_type: str = "F16"
    """The ggml type of the big matrices (norms stay F32)."""
    tied: bool = False
    """No `output.weight`: llama.cpp duplicates `token_embd.weight` as the output."""
    extra: dict[str, Any] = field(default_factory=dict)


MODELS: dict[str, Spec] = {
    "llama": Spec("llama", 4, 256, 8, 2, 32, 640, matrix_type="Q8_0"),
    "qwen2": Spec("qwen2", 4, 256, 4, 2, 64, 512, matrix_type="Q4_0"),
    "qwen3": Spec("qwen3", 4, 256, 4, 2, 128, 512, tied=True),
    "qwen3moe": Spec(
        "qwen3moe",
        3,
        256,
        4,
        2,
        64,
        512,
        extra={"n_expert": 8, "n_expert_used": 2, "n_ff_exp": 128},
    ),
    "gemma2": Spec("gemma2", 4, 256, 4, 2, 64, 512, tied=True, extra={"n_swa": 128}),
    "gemma3": Spec("gemma3", 6, 256, 4, 1, 64, 512, matrix_type="Q8_0", extra={"n_swa": 192}),
    "phi3": Spec("phi3", 4, 256, 8, 8, 32, 512, extra={"n_swa": 2047}),
    "deepseek2": Spec(
        "deepseek2",
        3,
        256,
        4,
        1,
        0,
        512,
        extra={
            "n_expert": 8,
            "n_expert_used": 2,
            "n_ff_exp": 128,
            "n_expert_shared": 1,
            "n_lead": 1,
            "kv_lora_rank": 128,
            "q_lora_rank": 64,
            "rope_dim": 32,
            "k_mla": 96,
            "v_mla": 64,
        },
    ),
    "lfm2": Spec(
        "lfm2",
        6,
        256,
        4,
        (0, 0, 2, 0, 0, 2),
        64,
        512,
        extra={"l_cache": 3},
    ),
}
"""Keyed by the architecture name llama.cpp reads from `general.architecture`."""


def _tensor_writer(writer: Any, default_type: str) -> Callable[..., None]:
    """`add(name, ne, type)`: a zeroed tensor of ggml shape `ne` (innermost first)."""
    import numpy as np
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    def add(name: str, ne: tuple[int, ...], type_name: str | None = None) -> None:
        qtype = GGMLQuantizationType[type_name or default_type]
        if len(ne) == 1:
            qtype = GGMLQuantizationType.F32
        block, type_size = GGML_QUANT_SIZES[qtype]
        if ne[0] % block:
            qtype = GGMLQuantizationType.F16
            block, type_size = GGML_QUANT_SIZES[qtype]
        row_bytes = ne[0] // block * type_size
        byte_shape = (*reversed(ne[1:]), row_bytes)
        writer.add_tensor(
            name, np.zeros(byte_shape, dtype=np.uint8), raw_shape=byte_shape, raw_dtype=qtype
        )

    return add


def _attention(add: Callable[..., None], i: int, s: Spec, n_kv: int, qk_norm: bool) -> None:
    q = s.n_head * s.head_dim
    kv = n_kv * s.head_dim
    add(f"blk.{i}.attn_q.weight", (s.n_embd, q))
    add(f"blk.{i}.attn_k.weight", (s.n_embd, kv))
    add(f"blk.{i}.attn_v.weight", (s.n_embd, kv))
    add(f"blk.{i}.attn_output.weight", (q, s.n_embd))
    if qk_norm:
        add(f"blk.{i}.attn_q_norm.weight", (s.head_dim,))
        add(f"blk.{i}.attn_k_norm.weight", (s.head_dim,))


def _dense_ffn(add: Callable[..., None], i: int, s: Spec) -> None:
    add(f"blk.{i}.ffn_gate.weight", (s.n_embd, s.n_ff))
    add(f"blk.{i}.ffn_up.weight", (s.n_embd, s.n_ff))
    add(f"blk.{i}.ffn_down.weight", (s.n_ff, s.n_embd))


def _experts(add: Callable[..., None], i: int, s: Spec) -> None:
    n_exp, n_ff_exp = s.extra["n_expert"], s.extra["n_ff_exp"]
    add(f"blk.{i}.ffn_gate_inp.weight", (s.n_embd, n_exp), "F32")
    add(f"blk.{i}.ffn_gate_exps.weight", (s.n_embd, n_ff_exp, n_exp))
    add(f"blk.{i}.ffn_up_exps.weight", (s.n_embd, n_ff_exp, n_exp))
    add(f"blk.{i}.ffn_down_exps.weight", (n_ff_exp, s.n_embd, n_exp))


def _kv_heads(s: Spec) -> tuple[int, ...]:
    if isinstance(s.n_head_kv, tuple):
        return s.n_head_kv
    return (s.n_head_kv,) * s.n_layer


def _metadata(w: Any, s: Spec) -> None:
    a = s.arch
    # Not the architecture's name: llama.cpp's vocabulary loader special-cases names that
    # contain "phi3" (it asks for an `<|endoftext|>` token this vocabulary lacks).
    w.add_name("vramscope-synthesized")
    w.add_uint32(f"{a}.block_count", s.n_layer)
    w.add_uint32(f"{a}.context_length", s.ctx_train)
    w.add_uint32(f"{a}.embedding_length", s.n_embd)
    w.add_uint32(f"{a}.feed_forward_length", s.n_ff)
    w.add_uint32(f"{a}.attention.head_count", s.n_head)
    if isinstance(s.n_head_kv, tuple):
        w.add_array(f"{a}.attention.head_count_kv", list(s.n_head_kv))
    else:
        w.add_uint32(f"{a}.attention.head_count_kv", s.n_head_kv)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32(f"{a}.rope.freq_base", 10000.0)
    if s.head_dim and s.head_dim * s.n_head != s.n_embd:
        w.add_uint32(f"{a}.attention.key_length", s.head_dim)
        w.add_uint32(f"{a}.attention.value_length", s.head_dim)
    if "n_swa" in s.extra:
        w.add_uint32(f"{a}.attention.sliding_window", s.extra["n_swa"])
    if "n_expert" in s.extra:
        w.add_uint32(f"{a}.expert_count", s.extra["n_expert"])
        w.add_uint32(f"{a}.expert_used_count", s.extra["n_expert_used"])
        w.add_uint32(f"{a}.expert_feed_forward_length", s.extra["n_ff_exp"])
    if a == "deepseek2":
        x = s.extra
        w.add_uint32(f"{a}.leading_dense_block_count", x["n_lead"])
        w.add_uint32(f"{a}.expert_shared_count", x["n_expert_shared"])
        w.add_uint32(f"{a}.attention.kv_lora_rank", x["kv_lora_rank"])
        w.add_uint32(f"{a}.attention.q_lora_rank", x["q_lora_rank"])
        w.add_uint32(f"{a}.rope.dimension_count", x["rope_dim"])
        # MLA as current converters write it: one KV head of the latent plus the rope part.
        w.add_uint32(f"{a}.attention.key_length", x["kv_lora_rank"] + x["rope_dim"])
        w.add_uint32(f"{a}.attention.value_length", x["kv_lora_rank"])
        w.add_uint32(f"{a}.attention.key_length_mla", x["k_mla"])
        w.add_uint32(f"{a}.attention.value_length_mla", x["v_mla"])
    if a == "lfm2":
        w.add_uint32(f"{a}.shortconv.l_cache", s.extra["l_cache"])
    # A SentencePiece vocabulary: three specials, the 256 byte tokens, then plain pieces.
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"t{i}" for i in range(N_VOCAB - len(tokens))]
    types = [2, 3, 3] + [6] * 256 + [1] * (N_VOCAB - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * N_VOCAB)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)


def _tensors(add: Callable[..., None], s: Spec) -> None:
    a = s.arch
    add("token_embd.weight", (s.n_embd, N_VOCAB))
    add("token_embd_norm.weight" if a == "lfm2" else "output_norm.weight", (s.n_embd,))
    if not s.tied and a != "gemma2":
        add("output.weight", (s.n_embd, N_VOCAB))
    for i, n_kv in enumerate(_kv_heads(s)):
        add(f"blk.{i}.attn_norm.weight", (s.n_embd,))
        add(f"blk.{i}.ffn_norm.weight", (s.n_embd,))
        if a == "deepseek2":
            _mla(add, i, s)
        elif a == "lfm2" and n_kv == 0:
            lc = s.extra["l_cache"]
            add(f"blk.{i}.shortconv.conv.weight", (lc, s.n_embd), "F32")
            add(f"blk.{i}.shortconv.in_proj.weight", (s.n_embd, 3 * s.n_embd))
            add(f"blk.{i}.shortconv.out_proj.weight", (s.n_embd, s.n_embd))
        else:
            _attention(add, i, s, n_kv, qk_norm=a in ("qwen3", "qwen3moe", "gemma3", "lfm2"))
        if a in ("gemma2", "gemma3"):
            add(f"blk.{i}.post_attention_norm.weight", (s.n_embd,))
            add(f"blk.{i}.post_ffw_norm.weight", (s.n_embd,))
        if a == "qwen3moe" or (a == "deepseek2" and i >= s.extra["n_lead"]):
            _experts(add, i, s)
            if a == "deepseek2":
                sh = s.extra["n_ff_exp"] * s.extra["n_expert_shared"]
                add(f"blk.{i}.ffn_gate_shexp.weight", (s.n_embd, sh))
                add(f"blk.{i}.ffn_up_shexp.weight", (s.n_embd, sh))
                add(f"blk.{i}.ffn_down_shexp.weight", (sh, s.n_embd))
        elif a == "phi3":
            add(f"blk.{i}.ffn_up.weight", (s.n_embd, 2 * s.n_ff))
            add(f"blk.{i}.ffn_down.weight", (s.n_ff, s.n_embd))
        else:
            _dense_ffn(add, i, s)


def _mla(add: Callable[..., None], i: int, s: Spec) -> None:
    x = s.extra
    rank, rope, k_mla, v_mla = x["kv_lora_rank"], x["rope_dim"], x["k_mla"], x["v_mla"]
    add(f"blk.{i}.attn_kv_a_norm.weight", (rank,))
    q_rank = x["q_lora_rank"]
    add(f"blk.{i}.attn_q_a_norm.weight", (q_rank,))
    add(f"blk.{i}.attn_q_a.weight", (s.n_embd, q_rank))
    add(f"blk.{i}.attn_q_b.weight", (q_rank, s.n_head * k_mla))
    add(f"blk.{i}.attn_kv_a_mqa.weight", (s.n_embd, rank + rope))
    add(f"blk.{i}.attn_k_b.weight", (k_mla - rope, rank, s.n_head))
    add(f"blk.{i}.attn_v_b.weight", (rank, v_mla, s.n_head))
    add(f"blk.{i}.attn_output.weight", (s.n_head * v_mla, s.n_embd))


def write_model(folder: Path, arch: str) -> Path:
    """Write the synthesized `arch` model into `folder`; returns its path."""
    from gguf import GGUFWriter

    spec = MODELS[arch]
    path = folder / f"synth-{arch}.gguf"
    writer = GGUFWriter(str(path), spec.arch)
    _metadata(writer, spec)
    _tensors(_tensor_writer(writer, spec.matrix_type), spec)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@dataclass(frozen=True)
class TensorInfo:
    """One tensor info as the memory model reads it."""

    name: str
    shape: tuple[int, ...]
    nbytes: int


def read_model(path: Path) -> tuple[dict[str, Any], list[TensorInfo]]:
    """A GGUF's metadata and tensor infos, read with gguf-py's own reader."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    meta = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    tensors = [
        TensorInfo(t.name, tuple(int(d) for d in t.shape), int(t.n_bytes)) for t in reader.tensors
    ]
    return meta, tensors
