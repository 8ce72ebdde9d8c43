"""What an error line says about a hostile or mistaken value (#16's cosmetic class)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.display_text import cap_echoes
from tui.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_5000_digit_memory_limit_is_echoed_cut_with_its_length(capsys) -> None:
    code, _, err = run(capsys, "inspect", "x", "--memory-limit", "9" * 5000)
    assert code == 2 and err.count("\n") == 1
    assert "…' (5,000 characters) is too long to be a size" in err
    assert len(err) < 400


def test_a_100k_character_model_name_is_echoed_cut(capsys) -> None:
    code, _, err = run(capsys, "inspect", "a" * 100_000)
    assert code == 2 and err.count("\n") == 1
    # The run includes the ':' after the name: 100,001 characters.
    assert "(100,001 characters)" in err and len(err) < 600


def test_cap_echoes_leaves_ordinary_lines_alone() -> None:
    line = "vramscope: error: --quant: unknown value 'x'; expected one of default, fp16"
    assert cap_echoes(line) == line
    assert cap_echoes("a " + "b" * 300) == "a " + "b" * 199 + "… (300 characters)"


@pytest.mark.parametrize(
    ("flag", "example"), [("--contexts", "640,4096"), ("--budgets", "256,1024,4096")]
)
def test_a_bad_table_list_gives_a_real_example(capsys, flag: str, example: str) -> None:
    code, _, err = run(capsys, "table", "x", flag, "abc")
    assert code == 2
    assert err == f"vramscope: error: {flag}: 'abc' is not a whole number (give e.g. {example})\n"


def test_an_empty_quant_is_refused_like_an_unknown_one(capsys) -> None:
    code, out, err = run(capsys, "inspect", "mlx-community/Qwen3-30B-A3B-4bit", "--quant", "")
    assert code == 2 and out == ""
    assert err == "vramscope: error: --quant: is empty; expected one of default, fp16, int8, int4\n"


def test_table_out_in_a_missing_folder_is_refused_before_any_run(capsys, tmp_path: Path) -> None:
    target = tmp_path / "nowhere" / "x.md"
    code, out, err = run(capsys, "table", "x", "--out", str(target))
    assert code == 2 and out == ""
    assert err == f"vramscope: error: --out: cannot write {target}: no such folder\n"
    assert not target.parent.exists()  # never made
