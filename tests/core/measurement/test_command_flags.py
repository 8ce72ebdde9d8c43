"""The model and context read from an engine's own command line (`vramscope run`)."""

from __future__ import annotations

from core.measurement.command_flags import EngineFamily, read_command


def test_mlx_lm_generate_in_each_of_its_spellings() -> None:
    for argv in (
        ["python", "-m", "mlx_lm", "generate", "--model", "m", "--max-tokens", "64"],
        ["/usr/bin/python3.11", "-m", "mlx_lm.generate", "--model=m", "-m", "64"],
        ["mlx_lm.generate", "--model", "m", "--max-tokens", "64"],
        ["env", "HF_HUB_OFFLINE=1", "mlx_lm", "generate", "--model", "m", "-m", "64"],
    ):
        facts = read_command(argv)
        assert (facts.family, facts.model, facts.context_tokens) == (EngineFamily.MLX_LM, "m", 64)
        assert facts.unread_line == (
            "from the command's flags (mlx-lm): the prompt's tokens (text) are not counted"
        )


def test_mlx_lm_defaults_and_caps() -> None:
    facts = read_command(
        ["mlx_lm.generate", "--model", "m", "--max-kv-size", "32", "--kv-bits", "8"]
    )
    assert facts.context_tokens == 32 and facts.kv_int8  # 100 by default, capped at 32
    assert "no --model" in (read_command(["mlx_lm.generate"]).unread_line or "")


def test_mlxcel_generate_serve_and_llama_cpp() -> None:
    gen = read_command(["mlxcel", "generate", "-m", "org/x", "-n", "4096"])
    assert (gen.family, gen.model, gen.context_tokens, gen.unread) == (
        EngineFamily.MLXCEL,
        "org/x",
        4096,
        (),
    )
    serve = read_command(
        ["mlxcel", "serve", "--model", "x", "--ctx-size", "8192", "--parallel", "4"]
    )
    assert serve.context_tokens == 2048  # the per-slot window
    llama = read_command(["./build/bin/llama-server", "-m", "a.gguf", "-c", "4096"])
    assert (llama.family, llama.model, llama.context_tokens) == (
        EngineFamily.LLAMA_CPP,
        "a.gguf",
        4096,
    )
    no_ctx = read_command(["llama-cli", "-m", "a.gguf"])
    assert no_ctx.context_tokens is None and "ctx-size" in (no_ctx.unread_line or "")


def test_another_program_is_said_in_one_line() -> None:
    facts = read_command(["sleep", "1"])
    assert facts.family is EngineFamily.OTHER and facts.model is None
    assert facts.unread_line is not None and "\n" not in facts.unread_line


HUGE = "9" * 5000
"""Past Python's 4,300-digit int conversion limit."""


def test_a_context_out_of_range_is_unread_with_a_line_never_a_traceback() -> None:
    for argv, flag in (
        (["mlx_lm.generate", "--model", "m", "--max-tokens", HUGE], "--max-tokens"),
        (["mlx_lm.generate", "--model", "m", "--max-kv-size", HUGE], "--max-kv-size"),
        (["mlxcel", "generate", "-m", "x", "-n", HUGE], "-n/--max-tokens"),
        (["mlxcel", "serve", "-m", "x", "--ctx-size", HUGE], "--ctx-size"),
        (["mlxcel", "serve", "-m", "x", "--ctx-size", "8192", "--parallel", HUGE], "--parallel"),
        (["llama-server", "-m", "x.gguf", "-c", HUGE], "-c/--ctx-size"),
        (["llama-cli", "-m", "x.gguf", "--ctx-size", "1" + "0" * 30], "-c/--ctx-size"),
        (["mlxcel", "bench", "-m", "x", "--max-tokens", "1" + "0" * 30], "-n/--max-tokens"),
    ):
        facts = read_command(argv)
        assert facts.context_tokens is None, argv[:4]
        line = facts.unread_line or ""
        assert f"{flag} '" in line and "out of range" in line, line
        assert "18,446,744,073,709,551,615" in line and len(line) < 300, line


def test_the_largest_context_in_range_is_read() -> None:
    top = str(2**64 - 1)
    assert read_command(["mlxcel", "generate", "-m", "x", "-n", top]).context_tokens == 2**64 - 1
    assert read_command(["llama-cli", "-m", "x", "-c", "00" + "131072"]).context_tokens == 131072
