"""The decoder forward pass for llama / mistral / qwen2 / qwen3 / qwen3_moe, in torch.

It follows mlx-lm's modules op for op (pre-norm blocks, GQA attention with
rotary embeddings, SwiGLU MLP or top-k routed experts) and hands every op's
outputs to the in-flight queue, which decides how long they stay alive. Logits
are computed for the last position only, as a generator needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hip_backend.model.arch import ArchSpec
from hip_backend.torch_engine.attention import MLX_FALLBACK, fused_attention, mlx_fallback_attention
from hip_backend.torch_engine.inflight import InflightQueue
from hip_backend.torch_engine.kv_cache import KVCache
from hip_backend.torch_engine.rope import Rope
from hip_backend.torch_engine.weights import Linear

if TYPE_CHECKING:
    import torch


@dataclass
class Attention:
    """One layer's attention weights."""

    q_proj: Linear
    k_proj: Linear
    v_proj: Linear
    o_proj: Linear
    q_norm: torch.Tensor | None = None
    k_norm: torch.Tensor | None = None


@dataclass
class DenseMlp:
    """SwiGLU MLP."""

    gate_proj: Linear
    up_proj: Linear
    down_proj: Linear


@dataclass
class MoeMlp:
    """Router plus stacked experts (`switch_mlp`)."""

    router: Linear
    gate_proj: Linear
    up_proj: Linear
    down_proj: Linear


@dataclass
class Block:
    """A decoder layer."""

    input_norm: torch.Tensor
    attention: Attention
    post_norm: torch.Tensor
    mlp: DenseMlp | MoeMlp


@dataclass
class DecoderModel:
    """Weights on the device plus the forward pass."""

    arch: ArchSpec
    embed: Linear
    blocks: list[Block]
    norm: torch.Tensor
    lm_head: Linear | None
    """None when the embeddings are tied."""
    rope: Rope
    dtype: torch.dtype
    device: torch.device
    weights_bytes: int = 0
    extra: dict[str, int] = field(default_factory=dict)
    attention: str = MLX_FALLBACK
    """Which attention MLX runs on the measured backend (`attention.attention_kind`)."""

    def linears(self) -> list[Linear]:
        """Every linear module (the embedding included: it is the tied head)."""
        out = [self.embed] + ([self.lm_head] if self.lm_head is not None else [])
        for block in self.blocks:
            a = block.attention
            out += [a.q_proj, a.k_proj, a.v_proj, a.o_proj]
            out += list(vars(block.mlp).values())
        return out

    def fuse_bf16_scales(self) -> int:
        """Run every quantized module with BF16 scales without a dequantized copy.

        MLX-ROCm sends affine matmuls whose scales are BF16 to a fused WMMA kernel
        that dequantizes in registers and allocates no weight copy (mlxcel's ROCm
        test notes it); F16-scale modules keep the dequantize-and-GEMM copy. Returns
        the number of modules switched.
        """
        import torch

        return self._no_copy(lambda linear: linear.scales_dtype == torch.bfloat16)

    def fuse_all_quantized(self) -> int:
        """Run every quantized module without a dequantized copy, as MLX's CPU
        `quantized_matmul` does at any row count (one 512-row q_proj adds only its output
        to mx.get_peak_memory: `scripts/bench_measure.py --only buffers`). Returns the
        number of modules switched."""
        return self._no_copy(lambda linear: linear.quantized)

    def _no_copy(self, which: Callable[[Linear], bool]) -> int:
        switched = 0
        for linear in self.linears():
            if which(linear):
                linear.no_copy = True
                switched += 1
        return switched

    def new_cache(self, queue: InflightQueue) -> list[KVCache]:
        """Empty KV caches, one per layer."""
        return [KVCache(queue) for _ in self.blocks]

    def forward(
        self,
        tokens: torch.Tensor,
        caches: list[KVCache],
        queue: InflightQueue,
        *,
        all_logits: bool = False,
    ) -> torch.Tensor:
        """Run `tokens` (`[B, L]`) through the model; logits of the last position
        (`[B, V]`), or of every position (`[B, L, V]`) with `all_logits`."""
        h = self.embed.dense_rows(tokens, queue)
        for block, cache in zip(self.blocks, caches, strict=True):
            h = self._block(block, h, cache, queue)
        if not all_logits:
            h = h[:, -1, :]
        h = rms_norm(h, self.norm, self.arch.rms_norm_eps, queue)
        head = self.lm_head if self.lm_head is not None else self.embed
        return head(h, queue)

    def prefill(self, tokens: torch.Tensor, caches: list[KVCache], queue: InflightQueue) -> None:
        """A prefill chunk as mlx-lm's `generate_step` runs it: it evaluates only the
        caches (`mx.eval([c.state for c in prompt_cache])`), so MLX's lazy graph never
        runs what no cache depends on: the last layer's queries, attention and MLP, the
        final norm and the head. Only the last layer's keys and values are computed."""
        h = self.embed.dense_rows(tokens, queue)
        *body, (last, last_cache) = zip(self.blocks, caches, strict=True)
        for block, cache in body:
            h = self._block(block, h, cache, queue)
        normed = rms_norm(h, last.input_norm, self.arch.rms_norm_eps, queue)
        self._keys_values(last.attention, normed, last_cache, queue)

    def _block(
        self, block: Block, x: torch.Tensor, cache: KVCache, queue: InflightQueue
    ) -> torch.Tensor:
        eps = self.arch.rms_norm_eps
        r = self._attention(
            block.attention, rms_norm(x, block.input_norm, eps, queue), cache, queue
        )
        h = x + r
        queue.op(h)
        queue.end_block()
        normed = rms_norm(h, block.post_norm, eps, queue)
        if isinstance(block.mlp, MoeMlp):
            r = self._moe(block.mlp, normed, queue)
        else:
            r = swiglu_mlp(block.mlp, normed, queue)
        out = h + r
        queue.op(out)
        queue.end_block()
        return out

    def _attention(
        self, attn: Attention, x: torch.Tensor, cache: KVCache, queue: InflightQueue
    ) -> torch.Tensor:
        arch = self.arch
        batch, length, _ = x.shape
        q = attn.q_proj(x, queue).view(batch, length, arch.num_heads, arch.head_dim)
        if attn.q_norm is not None:
            q = rms_norm(q, attn.q_norm, arch.rms_norm_eps, queue)
        offset = cache.offset
        q = self.rope(q.transpose(1, 2), offset)
        queue.op(q)
        keys, values = self._keys_values(attn, x, cache, queue)
        # Query i sees keys up to offset + i; a decode step sees every key.
        mask = causal_mask(length, offset, x.device) if length > 1 else None
        queue.op(mask)
        kernel = mlx_fallback_attention if self.attention == MLX_FALLBACK else fused_attention
        out = kernel(q, keys, values, mask, arch.head_dim**-0.5, queue)
        merged = out.transpose(1, 2).reshape(batch, length, arch.num_heads * arch.head_dim)
        queue.op(merged if merged.data_ptr() != out.data_ptr() else None)  # a view costs nothing
        return attn.o_proj(merged, queue)

    def _keys_values(
        self, attn: Attention, x: torch.Tensor, cache: KVCache, queue: InflightQueue
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The chunk's keys and values into the cache; the cache's keys and values."""
        arch = self.arch
        batch, length, _ = x.shape
        k = attn.k_proj(x, queue).view(batch, length, arch.num_kv_heads, arch.head_dim)
        v = attn.v_proj(x, queue).view(batch, length, arch.num_kv_heads, arch.head_dim)
        if attn.k_norm is not None:
            k = rms_norm(k, attn.k_norm, arch.rms_norm_eps, queue)
        k = self.rope(k.transpose(1, 2), cache.offset)
        queue.op(k)
        return cache.update(k, v.transpose(1, 2))

    def _moe(self, moe: MoeMlp, x: torch.Tensor, queue: InflightQueue) -> torch.Tensor:
        """mlx-lm's `Qwen3MoeSparseMoeBlock`: route, `switch_glu`, weight by the scores
        and sum over the chosen experts (`[T, k, H]` -> `[T, H]`, in the model's dtype)."""
        import torch

        spec = self.arch.moe
        assert spec is not None
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        gates = moe.router(flat, queue)
        probs = torch.softmax(gates.float(), dim=-1).to(gates.dtype)  # softmax(precise=True)
        scores, experts = probs.topk(spec.top_k, dim=-1)
        if spec.norm_topk_prob:
            scores = scores / scores.sum(dim=-1, keepdim=True)
        queue.op(probs, scores, experts)
        y = switch_glu(moe, flat, experts, queue)
        y.mul_(scores[..., None])  # MLX donates y (its only use) to the product
        queue.op(None)
        out = y.sum(dim=-2).view(shape)
        queue.op(out)
        return out


SORT_MIN_ASSIGNMENTS = 64
"""mlx-lm's `SwitchGLU` sorts the tokens by expert from 64 (token, expert) pairs on."""


def switch_glu(
    moe: MoeMlp, flat: torch.Tensor, experts: torch.Tensor, queue: InflightQueue
) -> torch.Tensor:
    """mlx-lm 0.32.2's `SwitchGLU` buffer for buffer: `[T, H]` tokens, `[T, k]` chosen
    experts -> `[T, k, H]`.

    From 64 pairs on it gather-sorts: each token is copied once per chosen expert
    (`[T*k, H]`, sorted by expert), the up, gate, activation and down outputs are
    `[T*k, I]`, `[T*k, I]`, `[T*k, I]` and `[T*k, H]`, and the result is unsorted by a
    second `[T*k, H]` copy. Below that `gather_qmm` reads the tokens in place, and the
    outputs are the same sizes in (token, slot) order. Each of those is one op of the
    queue; an expert's slice is computed from its packed words (no dequantized copy,
    as `gather_qmm`) and written into its rows."""
    import torch

    tokens, top_k = experts.shape
    indices = experts.reshape(-1)
    if indices.numel() >= SORT_MIN_ASSIGNMENTS:
        order = torch.argsort(indices, stable=True)
        inv_order = torch.argsort(order)
        xs = flat[order // top_k]  # `_gather_sort`: one copy per (token, expert) pair
        idx = indices[order]
        queue.op(order, inv_order, xs, idx)
        rows: torch.Tensor | None = None
    else:
        xs, idx, inv_order = flat, indices, None
        rows = torch.arange(indices.numel(), device=flat.device) // top_k
    # Every buffer stays alive until the block returns: MLX's CPU stream runs behind
    # the host, holding each op's inputs until the op has run (measured by
    # `scripts/bench_measure.py --only buffers`: 18.0 MB for mlx-lm's block at 512 tokens).
    x_up = _gather(moe.up_proj, xs, idx, rows, queue)
    x_gate = _gather(moe.gate_proj, xs, idx, rows, queue)
    act = swiglu(x_gate, x_up)
    queue.op(None)  # its output is the gate's buffer
    down = _gather(moe.down_proj, act, idx, None if rows is None else _pairs(idx), queue)
    if inv_order is not None:
        down = down[inv_order]  # `_scatter_unsort`
        queue.op(down)
    return down.view(tokens, top_k, -1)


def _pairs(idx: torch.Tensor) -> torch.Tensor:
    """Row i of the activation is pair i's own: the identity rows."""
    import torch

    return torch.arange(idx.numel(), device=idx.device)


def _gather(
    stacked: Linear,
    x: torch.Tensor,
    idx: torch.Tensor,
    rows: torch.Tensor | None,
    queue: InflightQueue,
) -> torch.Tensor:
    """One `gather_qmm`/`gather_mm`: output row i is `x[rows[i]] @ W[idx[i]].T`, as one
    `[len(idx), out]` buffer, one op of the queue. `rows` None: `idx` is sorted and row
    i of `x` is the input, so each expert's rows are one slice (no copy of them)."""
    import torch

    out_features = stacked.weight.shape[-2] if stacked.int4 is None else stacked.int4.out_features
    out = torch.empty((idx.numel(), out_features), dtype=x.dtype, device=x.device)
    if rows is None:
        counts = torch.bincount(idx).tolist()  # the host needs the segments: one sync
        start = 0
        for index, count in enumerate(counts):
            if count:
                end = start + count
                out[start:end] = stacked.expert(index).gathered(x[start:end])
                start = end
    else:
        for index in torch.unique(idx).tolist():
            where = (idx == index).nonzero().squeeze(-1)
            out[where] = stacked.expert(index).gathered(x[rows[where]])
    queue.op(out)
    return out


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float, queue: InflightQueue
) -> torch.Tensor:
    """RMSNorm computed in float32, rounded once, then scaled by the weight."""
    import torch

    xf = x.float()
    normed = (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)).to(x.dtype)
    out = weight * normed
    queue.op(out)
    return out


def swiglu_mlp(mlp: DenseMlp, x: torch.Tensor, queue: InflightQueue) -> torch.Tensor:
    """`down(silu(gate(x)) * up(x))`."""

    gate = mlp.gate_proj(x, queue)
    up = mlp.up_proj(x, queue)
    act = swiglu(gate, up)
    queue.op(None)  # its output is the gate's buffer
    return mlp.down_proj(act, queue)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """`silu(gate) * up` written over `gate`: mlx-lm's `swiglu` is an `mx.compile`d
    function, and the compiled kernel donates an input's buffer to its output (measured:
    evaluating it over two fresh `[2048, 512]` BF16 inputs adds those two buffers to
    `mx.get_peak_memory`, not a third)."""
    import torch.nn.functional as F

    return F.silu(gate, inplace=True).mul_(up)


def causal_mask(length: int, offset: int, device: torch.device) -> torch.Tensor:
    """Boolean `[length, offset + length]` mask: query i sees keys 0 .. offset + i."""
    import torch

    queries = torch.arange(offset, offset + length, device=device)[:, None]
    keys = torch.arange(offset + length, device=device)[None, :]
    return queries >= keys
