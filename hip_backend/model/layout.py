"""The modules of a decoder and the tensors each one stores, in mlx-lm's names.

One list serves two purposes: the loader checks a checkpoint against it, and a
model with no weights on disk gets its tensor list from it (what mlx-lm would
have written: U32 packed weights plus scales and biases for quantized modules).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from core.model.quant_scheme import QuantParams
from hip_backend.model.arch import ArchSpec


class ModuleKind(enum.Enum):
    """How a module's weight is used."""

    LINEAR = "linear"
    EMBEDDING = "embedding"
    NORM = "norm"
    EXPERTS = "experts"
    """Stacked expert linears `[E, out, in]` (mlx-lm's SwitchLinear)."""


@dataclass(frozen=True)
class ModuleSpec:
    """One weight-holding module: its path, kind, logical shape and optional bias."""

    path: str
    kind: ModuleKind
    shape: tuple[int, ...]
    """Logical weight shape: `[out, in]`, `[E, out, in]` or `[n]` for norms."""
    bias: bool = False
    quant: QuantParams | None = None

    @property
    def in_features(self) -> int:
        """The last (input) dimension."""
        return self.shape[-1]


@dataclass(frozen=True)
class TensorShape:
    """One stored tensor: safetensors name, dtype and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]


def _quant_for(arch: ArchSpec, path: str, kind: ModuleKind, in_features: int) -> QuantParams | None:
    if arch.quant is None or kind is ModuleKind.NORM:
        return None
    params = arch.quant.params_for(path)
    # mlx-lm leaves a layer in float when its input width is not a multiple of the group.
    if params is None or in_features % params.group_size or (in_features * params.bits) % 32:
        return None
    return params


def module_specs(arch: ArchSpec) -> list[ModuleSpec]:
    """Every module in load order (embeddings, layers, final norm, head)."""
    h, hd = arch.hidden_size, arch.head_dim
    q_out, kv_out = arch.num_heads * hd, arch.num_kv_heads * hd
    specs: list[tuple[str, ModuleKind, tuple[int, ...], bool]] = [
        ("model.embed_tokens", ModuleKind.EMBEDDING, (arch.vocab_size, h), False)
    ]
    for i in range(arch.num_layers):
        p = f"model.layers.{i}"
        specs += [
            (f"{p}.self_attn.q_proj", ModuleKind.LINEAR, (q_out, h), arch.qkv_bias),
            (f"{p}.self_attn.k_proj", ModuleKind.LINEAR, (kv_out, h), arch.qkv_bias),
            (f"{p}.self_attn.v_proj", ModuleKind.LINEAR, (kv_out, h), arch.qkv_bias),
            (f"{p}.self_attn.o_proj", ModuleKind.LINEAR, (h, q_out), arch.o_bias),
        ]
        if arch.qk_norm:
            specs += [
                (f"{p}.self_attn.q_norm", ModuleKind.NORM, (hd,), False),
                (f"{p}.self_attn.k_norm", ModuleKind.NORM, (hd,), False),
            ]
        specs += [
            (f"{p}.input_layernorm", ModuleKind.NORM, (h,), False),
            (f"{p}.post_attention_layernorm", ModuleKind.NORM, (h,), False),
        ]
        if arch.layer_is_moe(i):
            assert arch.moe is not None
            e, mi = arch.moe.num_experts, arch.moe.intermediate_size
            specs += [
                (f"{p}.mlp.gate", ModuleKind.LINEAR, (e, h), False),
                (f"{p}.mlp.switch_mlp.gate_proj", ModuleKind.EXPERTS, (e, mi, h), False),
                (f"{p}.mlp.switch_mlp.up_proj", ModuleKind.EXPERTS, (e, mi, h), False),
                (f"{p}.mlp.switch_mlp.down_proj", ModuleKind.EXPERTS, (e, h, mi), False),
            ]
        else:
            inter = arch.intermediate_size
            specs += [
                (f"{p}.mlp.gate_proj", ModuleKind.LINEAR, (inter, h), arch.mlp_bias),
                (f"{p}.mlp.down_proj", ModuleKind.LINEAR, (h, inter), arch.mlp_bias),
                (f"{p}.mlp.up_proj", ModuleKind.LINEAR, (inter, h), arch.mlp_bias),
            ]
    specs.append(("model.norm", ModuleKind.NORM, (h,), False))
    if not arch.tie_embeddings:
        specs.append(("lm_head", ModuleKind.LINEAR, (arch.vocab_size, h), False))
    return [
        ModuleSpec(path, kind, shape, bias, _quant_for(arch, path, kind, shape[-1]))
        for path, kind, shape, bias in specs
    ]


def stored_tensors(spec: ModuleSpec, float_dtype: str) -> list[TensorShape]:
    """The tensors mlx-lm writes for a module (weight, scales, biases, bias)."""
    if spec.quant is None:
        out = [TensorShape(f"{spec.path}.weight", float_dtype, spec.shape)]
    else:
        *lead, in_features = spec.shape
        bits, group = spec.quant.bits, spec.quant.group_size
        out = [
            TensorShape(f"{spec.path}.weight", "U32", (*lead, in_features * bits // 32)),
            TensorShape(f"{spec.path}.scales", float_dtype, (*lead, in_features // group)),
            TensorShape(f"{spec.path}.biases", float_dtype, (*lead, in_features // group)),
        ]
    if spec.bias:
        out.append(TensorShape(f"{spec.path}.bias", float_dtype, spec.shape[:-1]))
    return out


def tensors_from_config(arch: ArchSpec) -> list[TensorShape]:
    """The full tensor list of a model that has only its config."""
    return [t for spec in module_specs(arch) for t in stored_tensors(spec, arch.float_dtype)]
