"""The engines' option flags are generated from what each engine declares
(`core.measurement.engine`): `measure --help` and `table --help` list every option with
its choices, default and words; the parsed values are the request's; another engine's
option given is refused in one line (exit 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from core.measurement import engine as engines
from core.measurement.engine import Engine, EngineOption, engine_options
from tests.core.helpers import LLAMA_4BIT
from tui.cli import build_parser, main
from tui.commands.shared.flags import add_engine_option_flags
from tui.commands.shared.measure_args import request_from_args


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's refusals, and --help
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def llama(skeleton: Callable[..., Path]) -> str:
    return str(skeleton(LLAMA_4BIT, "index-only"))


@pytest.mark.parametrize("command", ["measure", "table"])
def test_help_lists_every_declared_option_with_its_choices_and_words(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    text = one_line(out)
    options = [(e, o) for e in Engine for o in e.spec.options]
    assert {o.name for _, o in options} == {"emulate", "attention", "fuse_bf16"}
    for engine, option in options:
        flag = "--" + option.name.replace("_", "-")
        assert f"{flag} {{{','.join(option.choices)}}}" in text
        assert one_line(f"{engine.label}: {option.doc} (default {option.default})") in text


def test_the_defaults_and_the_given_choices_reach_the_request(llama: str) -> None:
    parser = build_parser()
    plain = request_from_args(parser.parse_args(["measure", llama]), llama, 16)
    assert plain.options == {o.name: o.default for o in engine_options()}
    args = parser.parse_args(
        ["measure", llama, "--emulate", "none", "--attention", "torch-sdpa", "--fuse-bf16", "on"]
    )
    chosen = request_from_args(args, llama, 16)
    assert chosen.options == {"emulate": "none", "attention": "torch-sdpa", "fuse_bf16": "on"}
    # A `table` row of the mlx engine leaves the torch engine's choices out of its request.
    row = request_from_args(args, llama, 16, Engine.MLX)
    assert row.options == plain.options


@pytest.mark.parametrize(
    "flag", [["--emulate", "rocm"], ["--attention", "torch-sdpa"], ["--fuse-bf16", "off"]]
)
def test_another_engines_option_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], llama: str, flag: list[str]
) -> None:
    code, out, err = run(capsys, "measure", llama, "--engine", "mlx", *flag)
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert flag[0] in err and "torch engine" in err and "--engine mlx" in err


def test_an_option_a_spec_declares_becomes_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding an option is declaring it: its flag, choices and words follow."""
    knob = EngineOption("cache_mode", ("auto", "paged"), "how the KV cache is laid out")
    specs = dict(engines.ENGINE_SPECS)
    specs[Engine.MLX] = replace(specs[Engine.MLX], options=(knob,))
    monkeypatch.setattr(engines, "ENGINE_SPECS", specs)
    parser = argparse.ArgumentParser(prog="x")
    add_engine_option_flags(parser)
    text = one_line(parser.format_help())
    assert "--cache-mode {auto,paged}" in text
    assert "MLX (mlx-lm): how the KV cache is laid out (default auto)" in text
    assert parser.parse_args(["--cache-mode", "paged"]).cache_mode == "paged"
    assert parser.parse_args([]).cache_mode == "auto"
