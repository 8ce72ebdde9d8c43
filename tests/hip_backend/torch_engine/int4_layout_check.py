"""Run as a fresh interpreter (`python -m tests.hip_backend.torch_engine.int4_layout_check`), after
`ATEN_CPU_CAPABILITY` picked torch's vector unit: prints one JSON line with the
capability torch dispatched to, the int4 layout proven for it, and whether MLX-packed
words rewritten in that layout give the same products and the same dense weights."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from hip_backend.torch_engine import int4_cpu

if TYPE_CHECKING:
    import torch


def mlx_words(q: torch.Tensor) -> torch.Tensor:
    """MLX's packing of 4-bit values `[N, K]`: eight per uint32, lowest first."""
    import torch

    shifts = torch.arange(0, 32, 4, dtype=torch.int64)
    grouped = q.to(torch.int64).view(q.shape[0], -1, 8) << shifts
    return grouped.sum(-1).to(torch.uint32).view(torch.int32)


def main() -> None:
    import torch

    layout = int4_cpu.cpu_layout()
    report: dict[str, object] = {
        "capability": int4_cpu.cpu_capability(),
        "layout": layout.name if layout else None,
    }
    if layout is not None:
        generator = torch.Generator().manual_seed(1)
        n, k, group = 3 * layout.block_rows, 256, 64
        q = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=generator)
        scales = torch.rand((n, k // group), generator=generator) + 0.5
        biases = torch.rand((n, k // group), generator=generator) - 0.5
        dense = (q.float().view(n, -1, group) * scales[..., None] + biases[..., None]).view(n, k)
        words = mlx_words(q)
        assert int4_cpu.convertible(words, scales, 4, group)
        weight = int4_cpu.from_mlx(words, scales, biases, group)
        x = torch.randn((5, k), generator=generator)
        rows = torch.tensor([0, 1, layout.lanes, layout.block_rows + 3, n - 1])
        report["in_place"] = weight.packed.data_ptr() == words.data_ptr()
        report["matmul_error"] = float((weight.matmul(x) - x @ dense.T).abs().max())
        report["dequantize_error"] = float((weight.dequantize() - dense).abs().max())
        report["rows_error"] = float((weight.dequantize_rows(rows) - dense[rows]).abs().max())
    print(json.dumps(report))


if __name__ == "__main__":
    main()
