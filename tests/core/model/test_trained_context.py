"""The trained context, rope type by rope type, on real configs (#38).

Before: Llama-3.2 (`original_max_position_embeddings` 8,192 x llama3 factor 32 beside
`max_position_embeddings` 131,072) was said to be trained for 262,144 tokens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.model.config import ModelConfig
from core.model.trained_context import trained_context
from tui.cli import main

DATA = Path(__file__).parent / "data"
LLAMA_32 = "meta-llama__Llama-3.2-1B-Instruct"
# Qwen's model card: "add the following to config.json" to serve 131,072 with YaRN.
QWEN_YARN = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}


def config(name: str, **changes: Any) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((DATA / f"{name}.config.json").read_text())
    return {**found, **changes}


def words(root: dict[str, Any]) -> str | None:
    found = trained_context(ModelConfig.from_dict(root))
    return found.words if found is not None else None


@pytest.mark.parametrize(
    ("name", "changes", "expected"),
    [
        (
            LLAMA_32,
            {},
            "131,072 tokens (max_position_embeddings; rope llama3 x32 from 8,192, "
            "already in the window)",
        ),
        (
            "meta-llama__Llama-3.1-8B-Instruct",
            {},
            "131,072 tokens (max_position_embeddings; rope llama3 x8 from 8,192, "
            "already in the window)",
        ),
        ("Qwen__Qwen2.5-7B-Instruct", {}, "32,768 tokens (max_position_embeddings)"),
        (
            "Qwen__Qwen2.5-7B-Instruct",
            {"rope_scaling": QWEN_YARN},
            "131,072 tokens (yarn's original window x factor; rope yarn x4 from 32,768)",
        ),
        (
            # 163,840 = 4,096 x 40 already: the YaRN block is not applied twice.
            "deepseek-ai__DeepSeek-V2-Lite",
            {},
            "163,840 tokens (max_position_embeddings; rope yarn x40 from 4,096, "
            "already in the window)",
        ),
        (
            # Its text_config leaves the window out: Gemma3TextConfig's 131,072.
            "google__gemma-3-4b-it",
            {},
            "131,072 tokens (gemma3's default; rope linear x8, already in the window)",
        ),
        (
            "Qwen__Qwen2.5-7B-Instruct",
            {"rope_scaling": {"type": "dynamic", "factor": 2.0}},
            "32,768 tokens (max_position_embeddings; rope dynamic x2, at run time only)",
        ),
        (
            "Qwen__Qwen2.5-7B-Instruct",
            {"rope_scaling": {"rope_type": "ntk-by-parts", "factor": 2.0}},
            "32,768 tokens (max_position_embeddings; rope ntk-by-parts x2, "
            "not a type that stretches the window)",
        ),
    ],
)
def test_each_rope_type_gives_its_window_and_says_why(
    name: str, changes: dict[str, Any], expected: str
) -> None:
    assert words(config(name, **changes)) == expected


def test_a_yarn_block_without_its_original_stretches_max_position_embeddings() -> None:
    # transformers' rule: the original window defaults to max_position_embeddings.
    root = config("Qwen__Qwen2.5-7B-Instruct", rope_scaling={"type": "yarn", "factor": 4.0})
    assert words(root) == "131,072 tokens (yarn's original window x factor; rope yarn x4)"


@pytest.mark.parametrize("factor", [1.0, 0.5, "4", None])
def test_a_factor_that_stretches_nothing_leaves_the_window(factor: object) -> None:
    block = {"type": "yarn", "factor": factor, "original_max_position_embeddings": 32768}
    root = config("Qwen__Qwen2.5-7B-Instruct", rope_scaling=block)
    assert words(root) == "32,768 tokens (max_position_embeddings)"


def test_an_absurd_yarn_factor_is_no_window() -> None:
    block = {**QWEN_YARN, "factor": 1e300}
    root = config("Qwen__Qwen2.5-7B-Instruct", rope_scaling=block)
    assert words(root) == (
        "32,768 tokens (max_position_embeddings; rope yarn x1e+300 from 32,768, "
        "past any real window)"
    )


def test_control_characters_in_a_rope_type_never_reach_the_terminal() -> None:
    root = config(LLAMA_32, rope_scaling={"rope_type": "\x1b[31mllama3", "factor": 32.0})
    found = words(root)
    assert found is not None and "\x1b" not in found and "131,072 tokens" in found


def test_no_window_anywhere_is_no_trained_context() -> None:
    root = config(LLAMA_32)
    del root["max_position_embeddings"]
    assert words(root) is None
    assert words({**root, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}) is None


@pytest.mark.parametrize("json_flag", [False, True])
def test_inspect_of_llama_32_says_131072(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], json_flag: bool
) -> None:
    folder = tmp_path / "Llama-3.2-1B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_bytes((DATA / f"{LLAMA_32}.config.json").read_bytes())
    argv = ["inspect", str(folder), "--preset", "gfx1151", "--max-tokens", "640"]
    assert main(argv + (["--json"] if json_flag else [])) == 0
    out = capsys.readouterr().out
    if json_flag:
        ctx = json.loads(out)["largest_context"]
        assert (ctx["tokens"], ctx["trained_tokens"]) == (131072, 131072)
        assert ctx["capped_by_trained_context"] and ctx["memory_tokens"] > 131072
        assert ctx["rope_scaling"] == "llama3 x32 from 8,192, already in the window"
    else:
        line = next(x for x in out.splitlines() if "largest context" in x)
        assert line.startswith("vramscope: largest context that fits: 131,072 tokens, the trained")
        assert "262,144" not in out
