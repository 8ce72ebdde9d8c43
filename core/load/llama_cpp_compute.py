"""llama.cpp's compute buffer, fitted to llama.cpp's own reports (#40).

llama.cpp sizes its compute buffer by building the graph for one micro-batch
(`graph_reserve` at `n_ubatch` tokens, every token an output, over the whole cache) and
taking ggml's allocator's high-water mark: there is no closed form. vramscope models the
high-water mark as the larger of the step's two big moments, each the tensors llama.cpp
holds then, in bytes:

- the output: the f32 logits (`n_vocab x n_ubatch x 4`) and `beside_output` f32 rows of
  `n_embd` per token beside them;
- the attention: without flash attention the f32 scores of every head (`n_kv x n_ubatch x
  n_head x 4`), with it none; the mask (`n_kv x n_ubatch`, f32 without flash attention,
  f16 with it; a second one for the sliding-window layers); and `beside_attention` f32
  rows of `n_embd` per token.

Both are fitted per architecture and flash-attention setting to the compute buffer
llama.cpp reported for the synthesized models (tests/core/load/data/llama_cpp_golden.json,
made by scripts/llama_golden.py): the largest error over the table is in `FIT_ERROR`.
An architecture without its own fit takes the largest coefficients of all (over by up to
18% on the table). The term is labelled FITTED.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.load.llama_cpp_hparams import LlamaHparams
from core.load.load import LoadTerm, Origin, TermKind

F32 = 4
F16 = 2


@dataclass(frozen=True)
class ComputeFit:
    """The fitted f32 rows of `n_embd` per token beside the logits and beside the attention."""

    beside_output: float
    beside_attention: float


# (architecture, flash attention on) -> fit; from scripts/llama_golden.py's table by a grid
# search in quarters, minimizing the largest relative error.
COMPUTE_FITS: dict[tuple[str, bool], ComputeFit] = {
    ("llama", True): ComputeFit(2.0, 0.0),
    ("llama", False): ComputeFit(3.75, 3.5),
    ("qwen2", True): ComputeFit(5.25, 0.0),
    ("qwen2", False): ComputeFit(2.5, 4.75),
    ("qwen3", True): ComputeFit(5.75, 0.0),
    ("qwen3", False): ComputeFit(2.5, 7.75),
    ("qwen3moe", True): ComputeFit(2.5, 0.0),
    ("qwen3moe", False): ComputeFit(2.5, 4.75),
    ("gemma2", True): ComputeFit(5.25, 0.0),
    ("gemma2", False): ComputeFit(3.5, 3.25),
    ("gemma3", True): ComputeFit(2.5, 0.0),
    ("gemma3", False): ComputeFit(3.5, 0.25),
    ("phi3", True): ComputeFit(3.5, 0.0),
    ("phi3", False): ComputeFit(2.0, 7.0),
    ("deepseek2", True): ComputeFit(4.5, 0.0),
    ("deepseek2", False): ComputeFit(3.75, 12.0),
    ("lfm2", True): ComputeFit(3.25, 0.0),
    ("lfm2", False): ComputeFit(2.5, 4.75),
}
SPLIT_COPY_ROWS = 10
"""Rows of `n_embd` the host's compute buffer holds beside its layers' attention under
partial offload with flash attention (llama.cpp over an RPC device: 9 to 11.5 rows for
five architectures)."""
FIT_ERROR = 0.10
"""The largest relative error of a fitted architecture over the golden table (9.6%)."""


def _generic(flash: bool) -> ComputeFit:
    fits = [f for (_, on), f in COMPUTE_FITS.items() if on is flash]
    return ComputeFit(max(f.beside_output for f in fits), max(f.beside_attention for f in fits))


def compute_terms(
    hp: LlamaHparams,
    flash: bool,
    n_kv: int,
    swa_kv: int,
    n_ubatch: int,
    offloaded: bool,
    host_kv: int | None,
    device_kv: int | None,
) -> tuple[tuple[LoadTerm, bool], ...]:
    """The compute buffers for one micro-batch of `n_ubatch` tokens over `n_kv` cells per
    stream (`swa_kv` for the sliding-window layers, 0 when there are none), each with
    whether it is on the device. `host_kv` and `device_kv` are the widest cache among the
    repeating layers each place runs (None: it runs none).

    On the host alone it is one buffer, the larger moment. With layers offloaded each place
    holds the moments of what it runs: the device the output's (the output layer goes
    first) and the attention's once it holds repeating layers (fully offloaded, within 6%
    of llama.cpp's over an RPC device); the host the graph's inputs (the masks and two rows
    of `n_embd`), or, while repeating layers stay on it, their attention and the copies to
    the device.
    """
    fit = COMPUTE_FITS.get((hp.arch, flash))
    how = f"fitted for {hp.arch}" if fit else "the largest fit of any architecture"
    fit = fit or _generic(flash)
    ub = n_ubatch
    row = hp.n_embd * ub * F32
    output = hp.n_vocab * ub * F32 + fit.beside_output * row
    mask_bytes = F16 if flash else F32
    mask = (n_kv + swa_kv) * ub * mask_bytes
    scores = 0 if flash else n_kv * ub * hp.n_head * F32
    attention = scores + mask + fit.beside_attention * row
    flags = "flash attention" if flash else "no flash attention"
    main = LoadTerm(
        TermKind.COMPUTE,
        round(max(output, attention)),
        Origin.FITTED,
        f"{how} to llama.cpp's reports ({flags}, n_ubatch {ub})",
    )
    if not offloaded:
        return ((main, False),)
    # Offloaded, each place holds the moments of what it runs: the device the output's
    # and its layers' attention (over its widest cache), the host the graph's inputs and
    # its layers' attention; with flash attention the host's layers also need copies to
    # and from the device beside them (about ten rows of n_embd over an RPC device).

    def attention_over(cells: int) -> float:
        place_scores = 0 if flash else cells * ub * hp.n_head * F32
        return place_scores + mask + fit.beside_attention * row

    device_size = max(output, attention_over(device_kv) if device_kv is not None else 0)
    device = replace(main, bytes=round(device_size))
    inputs = mask + 2 * row
    host_attention = 0.0
    if host_kv is not None:
        host_attention = attention_over(host_kv) + (SPLIT_COPY_ROWS * row if flash else 0)
    host = LoadTerm(
        TermKind.COMPUTE,
        round(max(inputs, host_attention)),
        Origin.FITTED,
        "the host's compute buffer under offload: the graph's inputs"
        + (" and its layers' attention" if host_kv is not None else ""),
    )
    return (device, True), (host, False)
