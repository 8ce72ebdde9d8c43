"""Building a `DecoderModel` on a device from a weight plan: real bytes or random fill.

Every tensor is allocated once at its final place and filled there: read from
its file (`tensor_reader.py`), or, for synthetic weights, filled with random
values of the right dtype (packed words get random bits; scales and biases are
chosen so the dequantized weights look like a freshly initialised layer, which
keeps activations finite). Memory does not depend on the values.

Checkpoints in mlx-lm's layout (stacked `switch_mlp` experts) and in the
Hugging Face layout (`mlp.experts.{e}.*`, stacked here at load) both load.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hip_backend.errors import BadModelError, UnsupportedModelError
from hip_backend.model.arch import SUPPORTED_BITS, ArchSpec
from hip_backend.model.layout import ModuleKind, ModuleSpec, module_specs
from hip_backend.model.manifest import StoredTensor, WeightPlan
from hip_backend.torch_engine.decoder import Attention, Block, DecoderModel, DenseMlp, MoeMlp
from hip_backend.torch_engine.rope import Rope
from hip_backend.torch_engine.tensor_reader import TensorReader
from hip_backend.torch_engine.weights import Linear

if TYPE_CHECKING:
    import torch

ProgressFn = Callable[[int, int], None]

_TORCH_DTYPES = {"F16": "float16", "BF16": "bfloat16", "F32": "float32", "U32": "int32"}


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype for a safetensors dtype (U32 packed words are held as int32 bits)."""
    import torch

    if name not in _TORCH_DTYPES:
        raise BadModelError(f"weights stored as {name} are not supported for measurement")
    dtype: torch.dtype = getattr(torch, _TORCH_DTYPES[name])
    return dtype


@dataclass
class _Source:
    """One logical tensor to fill: a stored tensor, or per-expert pieces to stack."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    pieces: list[StoredTensor]
    role: str
    """weight, packed, scales, biases, bias, norm: picks the synthetic fill."""
    fan_in: int = 1
    bits: int = 0


@dataclass
class _ModulePlan:
    """The sources of one module: [weight], or [packed, scales, biases]; optional bias."""

    spec: ModuleSpec
    sources: list[_Source]
    bias: _Source | None = None
    bits: int = 0
    group_size: int = 0

    @property
    def pieces(self) -> int:
        """Stored tensors read for this module (progress units)."""
        return sum(len(s.pieces) for s in self.sources) + (self.bias is not None)


class _Builder:
    def __init__(self, arch: ArchSpec, plan: WeightPlan) -> None:
        self.arch = arch
        self.plan = plan

    def _stored(self, name: str) -> StoredTensor | None:
        return self.plan.tensors.get(name)

    def _require(self, name: str, shape: tuple[int, ...] | None = None) -> StoredTensor:
        stored = self._stored(name)
        if stored is None:
            raise BadModelError(f"tensor '{name}' is missing (needed by {self.arch.family})")
        if shape is not None and tuple(stored.shape) != shape:
            raise BadModelError(
                f"tensor '{name}' has shape {list(stored.shape)}, expected {list(shape)}"
            )
        return stored

    def _stacked(self, spec: ModuleSpec, suffix: str) -> list[StoredTensor]:
        """One stored tensor (mlx-lm stacked) or E per-expert tensors (Hugging Face)."""
        stored = self._stored(f"{spec.path}.{suffix}")
        if stored is not None or spec.kind is not ModuleKind.EXPERTS:
            return [stored] if stored is not None else []
        experts = spec.shape[0]
        hf = spec.path.replace(".switch_mlp.", ".experts.{}.")
        found = [self._stored(f"{hf.format(e)}.{suffix}") for e in range(experts)]
        if all(t is not None for t in found):
            return [t for t in found if t is not None]
        return []

    def norm(self, spec: ModuleSpec) -> _ModulePlan:
        """A norm's single weight."""
        stored = self._require(f"{spec.path}.weight", spec.shape)
        return _ModulePlan(spec, [_Source(stored.name, stored.dtype, spec.shape, [stored], "norm")])

    def linear(self, spec: ModuleSpec) -> _ModulePlan:
        """A linear, embedding or stacked-experts module, float or MLX affine."""
        weight = self._stacked(spec, "weight")
        if not weight:
            raise BadModelError(f"tensor '{spec.path}.weight' is missing")
        scales = self._stacked(spec, "scales")
        lead = spec.shape[:-1]
        in_features = spec.in_features
        sources: list[_Source] = []
        bits = group = 0
        if scales:
            biases = self._stacked(spec, "biases")
            if not biases:
                raise BadModelError(f"tensor '{spec.path}.biases' is missing")
            piece_lead = lead[1:] if len(weight) > 1 else lead
            words = weight[0].shape[-1]
            groups = scales[0].shape[-1]
            bits = words * 32 // in_features if in_features else 0
            group = in_features // groups if groups else 0
            if (
                bits not in SUPPORTED_BITS
                or words * 32 != bits * in_features
                or group * groups != in_features
            ):
                raise BadModelError(
                    f"'{spec.path}': packed width {words} and {groups} groups do not fit "
                    f"{in_features} inputs at 2, 4 or 8 bits"
                )
            if spec.quant is not None and (spec.quant.bits, spec.quant.group_size) != (bits, group):
                raise BadModelError(
                    f"'{spec.path}' is stored at {bits} bits, group {group}, but config.json "
                    f"says {spec.quant.bits} bits, group {spec.quant.group_size}"
                )
            for part, pieces, width in (
                ("packed", weight, words),
                ("scales", scales, groups),
                ("biases", biases, groups),
            ):
                self._check_pieces(pieces, (*piece_lead, width))
                sources.append(
                    _Source(
                        pieces[0].name,
                        pieces[0].dtype,
                        (*lead, width),
                        pieces,
                        part,
                        in_features,
                        bits,
                    )
                )
            if weight[0].dtype != "U32":
                raise BadModelError(
                    f"'{spec.path}.weight' is quantized but stored as {weight[0].dtype}"
                )
        else:
            piece_shape = spec.shape[1:] if len(weight) > 1 else spec.shape
            self._check_pieces(weight, piece_shape)
            sources.append(
                _Source(weight[0].name, weight[0].dtype, spec.shape, weight, "weight", in_features)
            )
        bias = None
        if spec.bias:
            bias_t = self._require(f"{spec.path}.bias", lead)
            bias = _Source(bias_t.name, bias_t.dtype, lead, [bias_t], "bias")
        return _ModulePlan(spec, sources, bias, bits, group)

    @staticmethod
    def _check_pieces(pieces: list[StoredTensor], shape: tuple[int, ...]) -> None:
        for piece in pieces:
            if tuple(piece.shape) != shape:
                raise BadModelError(
                    f"tensor '{piece.name}' has shape {list(piece.shape)}, expected {list(shape)}"
                )


class _Filler:
    """Allocates and fills tensors on the device, counting progress and bytes."""

    def __init__(self, device: torch.device, total: int, progress: ProgressFn | None) -> None:
        self.device = device
        self.reader = TensorReader(device)
        self.total = total
        self.done = 0
        self.progress = progress
        self.bytes = 0

    def fill(self, source: _Source, synthetic: bool) -> torch.Tensor:
        import torch

        dtype = torch_dtype(source.dtype)
        pieces = source.pieces
        if not synthetic and len(pieces) == 1 and self.device.type == "cpu":
            tensor = self.reader.mapped(pieces[0], dtype)  # a view of the file, no copy
        else:
            tensor = torch.empty(source.shape, dtype=dtype, device=self.device)
            if synthetic:
                _fill_random(tensor, source)
            elif len(pieces) == 1:
                self.reader.read_into(pieces[0], tensor)
            else:
                for index, piece in enumerate(pieces):
                    self.reader.read_into(piece, tensor[index])
        self.bytes += tensor.numel() * tensor.element_size()
        self.done += len(source.pieces)
        if self.progress is not None:
            self.progress(self.done, self.total)
        return tensor


def _fill_random(tensor: torch.Tensor, source: _Source) -> None:
    """Values like a freshly initialised layer: |w| <= 1/sqrt(fan_in)."""
    bound = 1.0 / math.sqrt(max(1, source.fan_in))
    if source.role == "packed":
        tensor.random_()
    elif source.role == "scales":
        tensor.fill_(2.0 * bound / ((1 << source.bits) - 1))
    elif source.role == "biases":
        tensor.fill_(-bound)
    elif source.role == "norm":
        tensor.fill_(1.0)
    elif source.role == "bias":
        tensor.zero_()
    else:
        tensor.uniform_(-bound, bound)


def plan_modules(arch: ArchSpec, plan: WeightPlan) -> list[_ModulePlan]:
    """Check the stored tensors against the architecture (no torch needed).

    Raises BadModelError naming the first tensor that is missing or misshapen, so
    a broken folder fails before the device is touched.
    """
    if arch.vocab_size < 1:
        raise BadModelError(f"config.json: vocab_size is {arch.vocab_size}; a model needs tokens")
    builder = _Builder(arch, plan)
    plans = [
        builder.norm(spec) if spec.kind is ModuleKind.NORM else builder.linear(spec)
        for spec in module_specs(arch)
    ]
    _check_one_float_dtype(plans)
    return plans


_FLOAT_DTYPES = frozenset({"F16", "BF16", "F32"})


def _check_one_float_dtype(plans: list[_ModulePlan]) -> None:
    """The engine computes in the embeddings' float dtype; weights, norms and scales in
    another one make torch refuse the matmul, so say so before loading anything."""
    embed = next((mp for mp in plans if mp.spec.path == "model.embed_tokens"), None)
    if embed is None:
        return
    parts = {s.role: s.dtype for s in embed.sources}
    compute = parts.get("scales", parts.get("weight"))
    for mp in plans:
        for source in mp.sources:
            if (
                source.role in ("weight", "norm", "scales")
                and source.dtype in _FLOAT_DTYPES
                and source.dtype != compute
            ):
                raise UnsupportedModelError(
                    f"mixed float dtypes: tensor '{source.name}' is {source.dtype} but the "
                    f"embeddings are {compute}; the measuring engine computes in one dtype"
                )


def build_model(
    arch: ArchSpec,
    plan: WeightPlan,
    device: torch.device,
    progress: ProgressFn | None = None,
    seed: int = 0,
) -> DecoderModel:
    """Load (or synthesise) every tensor the architecture needs and assemble the model."""
    import torch

    modules_plan = plan_modules(arch, plan)
    torch.manual_seed(seed)
    filler = _Filler(device, sum(m.pieces for m in modules_plan), progress)
    if progress is not None:  # the load has started (the parent times it from here)
        progress(0, filler.total)
    modules: dict[str, Any] = {}
    try:
        for mp in modules_plan:
            tensors = [filler.fill(s, plan.synthetic) for s in mp.sources]
            bias = filler.fill(mp.bias, plan.synthetic) if mp.bias is not None else None
            if mp.spec.kind is ModuleKind.NORM:
                modules[mp.spec.path] = tensors[0]
            elif len(tensors) == 3:
                packed, scales, biases = tensors
                tensors.clear()
                linear = Linear(packed, scales, biases, bias, mp.bits, mp.group_size)
                # Rewritten now, before the next module loads, so the conversion's
                # temporaries never add up (int4_cpu.py).
                converted = linear.for_cpu_int4()
                if converted is not linear:  # scales and biases now live in scale_zeros
                    filler.reader.release(scales)
                    filler.reader.release(biases)
                modules[mp.spec.path] = converted
                del linear, converted, packed, scales, biases
                # Their pages go now, not at the end of the load: held until then, every
                # module's scales and biases added up (33.6 MB over a 275 MB 4-bit MoE).
                filler.reader.drop_released()
            else:
                modules[mp.spec.path] = Linear(tensors[0], bias=bias)
        filler.reader.drop_released()
    finally:
        filler.reader.close()
    return _assemble(arch, modules, device, filler.bytes)


def _compute_dtype(embed: Linear) -> torch.dtype:
    import torch

    dtype = embed.scales_dtype or embed.weight.dtype
    if dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise BadModelError(f"embeddings stored as {dtype} are not supported for measurement")
    return dtype


def _assemble(
    arch: ArchSpec, m: dict[str, Any], device: torch.device, weights_bytes: int
) -> DecoderModel:
    blocks = []
    for i in range(arch.num_layers):
        p = f"model.layers.{i}"
        attention = Attention(
            m[f"{p}.self_attn.q_proj"],
            m[f"{p}.self_attn.k_proj"],
            m[f"{p}.self_attn.v_proj"],
            m[f"{p}.self_attn.o_proj"],
            m.get(f"{p}.self_attn.q_norm"),
            m.get(f"{p}.self_attn.k_norm"),
        )
        mlp: DenseMlp | MoeMlp
        if arch.layer_is_moe(i):
            mlp = MoeMlp(
                m[f"{p}.mlp.gate"],
                m[f"{p}.mlp.switch_mlp.gate_proj"],
                m[f"{p}.mlp.switch_mlp.up_proj"],
                m[f"{p}.mlp.switch_mlp.down_proj"],
            )
        else:
            mlp = DenseMlp(m[f"{p}.mlp.gate_proj"], m[f"{p}.mlp.up_proj"], m[f"{p}.mlp.down_proj"])
        blocks.append(
            Block(m[f"{p}.input_layernorm"], attention, m[f"{p}.post_attention_layernorm"], mlp)
        )
    embed = m["model.embed_tokens"]
    return DecoderModel(
        arch=arch,
        embed=embed,
        blocks=blocks,
        norm=m["model.norm"],
        lm_head=m.get("lm_head"),
        rope=Rope(arch.rope, arch.head_dim, device),
        dtype=_compute_dtype(embed),
        device=device,
        weights_bytes=weights_bytes,
    )


REHEARSAL_VOCAB = 256
"""The rehearsal model's vocabulary (`rehearsal_arch`)."""
REHEARSAL_EXPERTS = 8
"""The rehearsal model's experts (twice the top-k where that is more; `rehearsal_arch`)."""


def rehearsal_arch(arch: ArchSpec) -> ArchSpec:
    """`arch` at a tiny width: the same family, layers, modules, top-k, head dim, dtypes
    and quantization, with one KV head (as many query heads as share one in `arch`),
    every width one quantization group (at least 64), `REHEARSAL_EXPERTS` experts and
    a vocabulary of `REHEARSAL_VOCAB`. Loading it and running a pass over it before
    the baseline makes the first load's and the first pass's own process memory
    resident (code pages, lazily built state) in seconds, while no byte of it is a
    tensor the real model holds (Qwen3-30B-A3B-4bit's: 9.4 MB, 4.6-8.4 s on 2 busy
    cores)."""
    import dataclasses

    quant = arch.quant
    groups = [64]
    if quant is not None:
        groups += [p.group_size for p in (quant.default, *quant.overrides.values()) if p]
    width = max(groups)
    moe = arch.moe
    if moe is not None:  # each projection's experts are one stacked tensor, whatever E
        experts = min(moe.num_experts, max(REHEARSAL_EXPERTS, 2 * moe.top_k))
        moe = dataclasses.replace(moe, num_experts=experts, intermediate_size=width)
    return dataclasses.replace(
        arch,
        hidden_size=width,
        num_heads=max(1, arch.num_heads // max(1, arch.num_kv_heads)),
        num_kv_heads=1,
        intermediate_size=width,
        vocab_size=REHEARSAL_VOCAB,
        moe=moe,
    )


def build_rehearsal(arch: ArchSpec, device: torch.device, seed: int = 0) -> DecoderModel:
    """The model of `rehearsal_arch(arch)`, with random weights."""
    from hip_backend.model.layout import tensors_from_config
    from hip_backend.model.manifest import synthetic_plan

    tiny = rehearsal_arch(arch)
    plan = synthetic_plan(tensors_from_config(tiny), "rehearsal before the baseline")
    return build_model(tiny, plan, device, seed=seed)
