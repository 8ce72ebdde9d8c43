"""What torch would report, asked in a child: the reply parsed and checked, and the
real torch of this environment (a CPU build: no GPU) asked once."""

from __future__ import annotations

import json
import sys

import pytest

from core.probes.torch_device import parse_torch_reply, read_torch_device, torch_installed


def test_a_gpu_reply_is_read_and_checked() -> None:
    reply = {"gpu": True, "version": "2.6.0+rocm6.4", "name": "AMD Radeon 8060S",
             "arch": "gfx1151", "free": 120 << 30, "total": 96 << 30,
             "total_memory": 96 << 30}  # fmt: skip
    found = parse_torch_reply("noise\n" + json.dumps(reply))
    assert found is not None
    assert found.name == "AMD Radeon 8060S (gfx1151)"
    assert (found.free, found.total) == (120 << 30, 96 << 30)  # free above total: said as is
    bad = parse_torch_reply(json.dumps({**reply, "free": -1, "total": True}))
    assert bad is not None and (bad.free, bad.total) == (None, None)
    assert parse_torch_reply("not json") is None
    assert parse_torch_reply(json.dumps({"gpu": True})) is None


@pytest.mark.slow
@pytest.mark.skipif(not torch_installed(), reason="torch is not installed")
def test_the_real_torch_answers_in_a_child() -> None:
    found = read_torch_device(python=sys.executable)
    assert found is not None and found.version
    import torch  # the child's answer is this environment's

    assert (found.name is None) == (not torch.cuda.is_available())
