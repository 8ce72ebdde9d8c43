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
