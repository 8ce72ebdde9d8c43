"""The CLI's token and size flags read core.value_grammar's forms, and refuse the rest in
one line naming the flag and the value (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from core.units import GIB, MIB
from tests.core.helpers import LLAMA_4BIT
from tui.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's refusals
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def llama(skeleton: Callable[..., Path]) -> str:
    return str(skeleton(LLAMA_4BIT, "index-only"))


def inspect_json(capsys, folder: str, *flags: str) -> dict[str, object]:
    code, out, err = run(capsys, "inspect", folder, "--backend", "cpu", "--json", *flags)
    assert (code, err) == (0, "")
    return dict(json.loads(out))


@pytest.mark.parametrize(
    ("text", "tokens"), [("32k", 32_768), ("1.5k", 1_536), ("128K", 131_072), ("8,192", 8_192)]
)
def test_max_tokens_takes_the_explorers_forms(capsys, llama: str, text: str, tokens: int) -> None:
    data = inspect_json(capsys, llama, "--memory-limit", "64GB", "--max-tokens", text)
    inputs = data["inputs"]
    assert isinstance(inputs, dict) and inputs["max_tokens"] == tokens


@pytest.mark.parametrize(
    ("text", "size"),
    [("24GB", 24 * GIB), ("24GiB", 24 * GIB), ("512M", 512 * MIB), ("25769803776", 24 * GIB)],
)
def test_memory_limit_takes_binary_sizes(capsys, llama: str, text: str, size: int) -> None:
    assert inspect_json(capsys, llama, "--memory-limit", text)["budget_bytes"] == size


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (
            ["--max-tokens", "-5"],
            "vramscope inspect: error: argument --max-tokens/-n: must not be negative, "
            "got '-5' (see --help)",
        ),
        (
            ["--max-tokens", "1.1k"],
            "vramscope inspect: error: argument --max-tokens/-n: '1.1k' is not a whole number "
            "of tokens (see --help)",
        ),
        (
            ["--max-tokens", "32kb"],
            "vramscope inspect: error: argument --max-tokens/-n: 'kb' is not a unit: use k or m "
            "(x1024) (see --help)",
        ),
        (
            ["--memory-limit", "-24GB"],  # joined to its flag, not read as an option
            "vramscope: error: --memory-limit: must not be negative, got '-24GB'",
        ),
        (
            ["--memory-limit", "24XB"],
            "vramscope: error: --memory-limit: 'xb' is not a unit: use K, M, G or T (x1024), "
            "alone or with B or iB",
        ),
        (
            ["--memory-limit", "1e30GB"],
            "vramscope: error: --memory-limit: '1e30GB' is not a size "
            "(e.g. 24GB, 24GiB, 512M or 1073741824)",
        ),
        (
            ["--memory-limit", "16777216TB"],
            "vramscope: error: --memory-limit: must be at most 18,446,744,073,709,551,615 "
            "bytes, got '16777216TB'",
        ),
    ],
)
def test_each_refusal_is_one_line_naming_the_flag_and_value(
    capsys, llama: str, flags: list[str], line: str
) -> None:
    code, out, err = run(capsys, "inspect", llama, "--backend", "cpu", *flags)
    assert (code, out, err) == (2, "", line + "\n")


def test_memory_limit_0_means_not_set_and_says_so(capsys, llama: str, monkeypatch) -> None:
    monkeypatch.setenv("MLXCEL_MEMORY_LIMIT", "512MB")
    code, out, err = run(
        capsys, "inspect", llama, "--backend", "cpu", "--json", "--memory-limit", "0"
    )
    assert code == 0
    assert json.loads(out)["budget_bytes"] == 512 * MIB  # the variable decides, as for =0
    assert err == (
        "vramscope: warning: --memory-limit 0 means not set (as MLXCEL_MEMORY_LIMIT=0 does): "
        "available memory comes from MLXCEL_MEMORY_LIMIT or this machine\n"
    )


def test_memory_limit_none_is_the_deliberate_spelling_of_not_set(
    capsys, llama: str, monkeypatch
) -> None:
    monkeypatch.setenv("MLXCEL_MEMORY_LIMIT", "512MB")
    code, out, err = run(
        capsys, "inspect", llama, "--backend", "cpu", "--json", "--memory-limit", "none"
    )
    assert (code, err) == (0, "")
    assert json.loads(out)["budget_bytes"] == 512 * MIB


def test_per_rank_limits_take_the_same_forms(capsys) -> None:
    code, out, err = run(
        capsys, "inspect", LLAMA_4BIT, "--tp", "2", "--backend", "cpu", "--json",
        "--memory-limit", "24GiB,512M", "--max-tokens", "1.5k",
    )  # fmt: skip
    assert (code, err) == (0, "")
    ranks = json.loads(out)["ranks"]
    assert [r["budget_bytes"] for r in ranks] == [24 * GIB, 512 * MIB]
    code, _, err = run(
        capsys, "inspect", LLAMA_4BIT, "--tp", "2", "--memory-limit", "24GB,-1G", "--backend", "cpu"
    )
    assert code == 2
    assert err == "vramscope: error: --memory-limit: must not be negative, got '-1G'\n"


@pytest.mark.parametrize(
    ("flags", "fault"),
    [
        (["--memory-cap", "0"], "--memory-cap: must be more than 0 bytes, got '0'"),
        (["--memory-cap", "-8GB"], "--memory-cap: must not be negative, got '-8GB'"),
        (["--memory-cap=-.5G"], "--memory-cap: must not be negative, got '-.5G'"),
        (["--prompt-tokens", "-5"], "--prompt-tokens: must not be negative, got '-5'"),
        (["--gen-tokens", "17m"], "--gen-tokens: must be at most 16,777,216 tokens, got '17m'"),
    ],
)
def test_measure_refuses_before_any_run(capsys, llama: str, flags: list[str], fault: str) -> None:
    code, out, err = run(capsys, "measure", llama, *flags)
    assert code == 2 and out == "" and err.count("\n") == 1 and fault in err
