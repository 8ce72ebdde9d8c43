"""The MoE block holds what mlx-lm 0.32.2's `SwitchGLU` holds: from 64 (token, expert)
pairs on, each token copied once per chosen expert (`[T*k, H]`), up and gate
`[T*k, I]` (the activation written over the gate), down `[T*k, H]` and its unsorted
copy; below 64, no copy of the tokens.
Counted by the in-flight queue holding every op's outputs, and checked for values
against each pair computed on its own."""

from __future__ import annotations

import pytest

from hip_backend.torch_engine.decoder import MoeMlp, switch_glu
from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent
from hip_backend.torch_engine.weights import Linear
from tests.installed import Later, needs

torch = Later("torch")
F = Later("torch.nn.functional")
pytestmark = needs("torch")

E, H, INNER = 8, 64, 32


def block() -> MoeMlp:
    g = torch.Generator().manual_seed(0)

    def stacked(out: int, inp: int) -> Linear:
        return Linear(torch.randn(E, out, inp, generator=g) / inp**0.5)

    return MoeMlp(Linear(torch.randn(E, H, generator=g)), stacked(INNER, H), stacked(INNER, H),
                  stacked(H, INNER))  # fmt: skip


def each_pair(moe: MoeMlp, x: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
    rows = []
    for t, chosen in enumerate(experts.tolist()):
        for e in chosen:
            xt = x[t : t + 1]
            h = F.silu(xt @ moe.gate_proj.weight[e].T) * (xt @ moe.up_proj.weight[e].T)
            rows.append(h @ moe.down_proj.weight[e].T)
    return torch.cat(rows).view(experts.shape[0], experts.shape[1], H)


@pytest.mark.parametrize(("tokens", "sorted_"), [(32, True), (16, True), (3, False)])
def test_switch_glu_holds_mlx_s_buffers(tokens: int, sorted_: bool) -> None:
    top_k = 4
    moe = block()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(tokens, H, generator=g)
    experts = torch.stack([torch.randperm(E, generator=g)[:top_k] for _ in range(tokens)])
    queue = InflightQueue(0, LaggingEvent, op_cap=10_000)  # holds every output
    y = switch_glu(moe, x, experts, queue)
    torch.testing.assert_close(y, each_pair(moe, x, experts), rtol=1e-5, atol=1e-5)
    pairs = tokens * top_k
    assert (pairs >= 64) is sorted_
    f32, i64 = 4, 8
    # up, gate (the activation is written over the gate: mlx-lm's compiled swiglu
    # donates an input's buffer), down
    up_gate_down = pairs * INNER * f32 * 2 + pairs * H * f32
    if sorted_:
        # order, inv_order, sorted indices; the tokens once per pair; the unsorted copy
        expected = 3 * pairs * i64 + pairs * H * f32 + up_gate_down + pairs * H * f32
    else:
        expected = up_gate_down  # gather_qmm reads the tokens in place
    assert queue.stats.max_held_bytes == expected
