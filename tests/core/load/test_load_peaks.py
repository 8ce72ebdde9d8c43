"""The load's total against real MLX peaks, for the prefill rules beyond the llama fit.

Each model is written by mlx-lm itself from a sparse config and run through mlx-lm's
`generate_step` in a child (`mlx_lm_kv_reference`, `mx.get_peak_memory` over the case
with the weights in place; the four in one child, each on its own: nothing of the
models before it held, MLX's buffer cache emptied). vramscope reads the same folder
as a user's. Each shape here is one whose peak the llama-fitted transient did not
cover (measured on this CPU: queries 4x the hidden size -4.9%, gemma3's array masks
and gelu MLP -6.8%, gpt-oss's sinks -9.8%, qwen3_next's linear recurrence -22.1%);
the load must cover it, within 25% (the 30 hidden copies the dense families need
overshoot these small shapes by up to 19% in the bench; the 15% bar is the median's,
docs/benchmark_results).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.core.load.test_mlx_lm_kv_exact import mlx_lm_many, vramscope_plan

pytestmark = [pytest.mark.child_process, pytest.mark.slow]

SHAPES: dict[str, dict[str, Any]] = {
    # First in the child: the tightest margin (4.4%). Run after qwen3's its peak read 1.4%
    # higher (53.49 MB); run first, what a process of its own reads (52.76 MB).
    # The module's defaults: 4 heads of 256 over 320, 1 KV head; sliding layers of 128
    # get an array mask.
    "gemma3_text": {
        "config": {
            "model_type": "gemma3_text", "hidden_size": 320, "num_hidden_layers": 7,
            "intermediate_size": 1280, "vocab_size": 4000, "sliding_window": 128,
        },
        "cases": [[480, 2, None, 5000]],
    },
    # 16 heads of 128 over a hidden size of 512: the queries are 4x as wide.
    "qwen3-wide-queries": {
        "config": {
            "model_type": "qwen3", "hidden_size": 512, "num_hidden_layers": 2,
            "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
            "intermediate_size": 1536, "vocab_size": 4000, "rms_norm_eps": 1e-5,
            "max_position_embeddings": 4096, "rope_theta": 10000.0,
            "tie_word_embeddings": False,
        },
        "cases": [[300, 4, None, 5000]],
    },
    "gpt_oss": {
        "config": {
            "model_type": "gpt_oss", "hidden_size": 256, "num_hidden_layers": 4,
            "intermediate_size": 256, "num_local_experts": 8, "num_experts_per_tok": 2,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
            "sliding_window": 128, "vocab_size": 4000,
        },
        "dtype": "float32",
        "cases": [[320, 2, None, 5000]],
    },
    "qwen3_next": {
        "config": {
            "model_type": "qwen3_next", "hidden_size": 256, "num_hidden_layers": 4,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
            "intermediate_size": 512, "vocab_size": 4000, "rms_norm_eps": 1e-5,
            "linear_num_value_heads": 4, "linear_num_key_heads": 2,
            "linear_key_head_dim": 64, "linear_value_head_dim": 64,
            "linear_conv_kernel_dim": 4, "num_experts": 8, "num_experts_per_tok": 2,
            "moe_intermediate_size": 256, "shared_expert_intermediate_size": 256,
            "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": True,
            "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
            "max_position_embeddings": 4096,
        },
        "dtype": "float32",
        "cases": [[384, 2, None, 5000]],
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def mlx_lm_peaks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Every shape through mlx-lm in one child (mlx-lm's import took 1.2 s of processor
    time in each of four): its folders and, by shape, its line (or its error)."""
    root = tmp_path_factory.mktemp("mlx-lm-peaks")
    return root, mlx_lm_many(SHAPES, root)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_load_covers_mlx_s_peak_within_25_percent(
    name: str, mlx_lm_peaks: tuple[Path, dict[str, Any]]
) -> None:
    root, by_shape = mlx_lm_peaks
    folder = root / name
    lines = by_shape.get(name, [])
    assert isinstance(lines, list), f"mlx-lm failed on {name}: {lines}"
    [measured] = lines
    prompt, generated = measured["case"][:2]
    load = vramscope_plan(folder, kv_int8=False, start=5000).at(prompt + generated, prompt)
    assert load.kv_bytes == measured["kv_bytes"]
    peak = measured["peak_bytes"]
    assert peak > load.weights_bytes + load.kv_bytes  # the run held a transient at all
    assert peak <= load.total_bytes <= 1.25 * peak, (name, peak, load.total_bytes)
