"""`vramscope inspect --verbose`: what mlxcel would size from the estimate, hand-checked."""

from __future__ import annotations

import pytest

from tui.cli import main

LLAMA = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"


def test_verbose_inspect_prints_what_mlxcel_would_size(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["inspect", LLAMA, "--backend", "rocm", "--memory-limit", "82463372083", "-v"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # Paged KV auto at 8192 tokens: floor((82,463,372,083 - A 38,005,248 - I 1,073,741,824)
    # / 1.2) - W 4,517,404,672 = 63,275,616,170 bytes.
    assert "Paged KV budget (auto):   63,275,616,170 bytes (58.93 GiB)" in out
    # 16-token blocks of one layer: 131,072 / 32 layers x 16 = 65,536 bytes each, after the
    # v2 workspace of 129 x 128 x 129 x 4 x 2 = 17,040,384 bytes: 965,249 blocks.
    assert "Paged blocks (16 tokens): 965,249 after the v2 workspace reserve of 17,040,384" in out
    # Six 8192-token KV entries of 1 GiB, under a quarter of the slack: 6 GiB.
    assert "Prompt cache:             kv store, 6,442,450,944 bytes" in out
    # Off Apple mlxcel's memory is 0 GB, so the advice always ends at its last branch.
    assert "--recommend-quant:        INT4 (Memory constrained" in out


def test_plain_inspect_has_no_sizing_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", LLAMA, "--backend", "rocm"]) == 0
    assert "What mlxcel would size" not in capsys.readouterr().out
