"""`vramscope`, `vramscope explore` and `vramscope screenshot` from the command line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tui.cli import main
from tui.headless import PngUnavailable, svg_to_png

ROOT = Path(__file__).resolve().parents[3]


def exit_code(argv: list[str]) -> int:
    """main's return value, or the code argparse exits with."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_screenshot_writes_an_svg_of_the_settled_screen(tmp_path: Path, capsys) -> None:
    out = tmp_path / "shot.svg"
    code = main(
        ["screenshot", str(out), "--preset", "gfx1151", "--backend", "rocm", "--size", "100x30"]
    )
    assert code == 0
    assert capsys.readouterr().out.strip() == str(out)
    svg = out.read_text()
    assert svg.startswith("<svg")
    assert "FITS" in svg  # the model was read before the picture was taken
    assert "Backend&#160;in-flight" in svg


def test_screenshot_flags_reach_the_screen(tmp_path: Path) -> None:
    out = tmp_path / "cuda.svg"
    args = ["screenshot", str(out), "--backend", "cuda", "--inflight-mb", "4096"]
    assert main([*args, "--max-tokens", "131072", "--preset", "rx7900xtx"]) == 0
    svg = out.read_text()
    assert "DOES&#160;NOT&#160;FIT" in svg
    assert "Backend&#160;in-flight" not in svg


def png_available() -> bool:
    try:
        svg_to_png('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>', 1)
    except PngUnavailable:
        return False
    return True


@pytest.mark.skipif(not png_available(), reason="cairosvg or libcairo is not installed")
def test_screenshot_png(tmp_path: Path) -> None:
    out = tmp_path / "shot.png"
    assert main(["screenshot", str(out), "--preset", "gfx1151", "--size", "80x24"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_screenshot_png_without_cairosvg_names_the_extra_before_rendering(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tui.headless

    rendered: list[object] = []
    monkeypatch.setitem(sys.modules, "cairosvg", None)  # import cairosvg raises ImportError
    monkeypatch.setattr(tui.headless, "render_svg", lambda *a: rendered.append(a))
    out = tmp_path / "shot.png"
    assert exit_code(["screenshot", str(out), "--size", "80x24"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "pip install 'vramscope[png]'" in err[0] and "or write .svg" in err[0]
    assert rendered == [] and not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--size", "10x5"], "at least 40x12"),
        (["--size", "big"], "expected WIDTHxHEIGHT"),
        (["--preset", "nope"], "invalid choice"),
        (["--memory-limit", "lots"], "is not a size"),
        (["--quant", "int3"], "unknown value 'int3'"),
    ],
)
def test_screenshot_bad_flags_are_one_line_errors(
    tmp_path: Path, capsys, args: list[str], message: str
) -> None:
    assert exit_code(["screenshot", str(tmp_path / "x.svg"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.svg").exists()


def test_screenshot_needs_svg_or_png(tmp_path: Path, capsys) -> None:
    assert main(["screenshot", str(tmp_path / "x.jpg")]) == 2
    assert "must end in .svg or .png" in capsys.readouterr().err


def test_no_subcommand_without_a_terminal_prints_the_help(capsys) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "explore" in out
    assert "screenshot" in out


def test_explore_without_a_terminal_says_so(capsys) -> None:
    assert main(["explore"]) == 2
    assert "the explorer needs a terminal" in capsys.readouterr().err


def test_the_command_line_never_imports_textual_or_torch() -> None:
    code = (
        "import sys; from tui.cli import build_parser; build_parser(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'torch'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_explorer_itself_never_imports_torch() -> None:
    code = (
        "import sys; import tui.app, tui.headless; "
        "print('torch' in sys.modules, 'textual' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False True"


def test_screenshot_with_this_device_s_free_memory(tmp_path: Path) -> None:
    """`--memory-limit free` opens the explorer on "This device · free", read on this machine."""
    out = tmp_path / "free.svg"
    # 200 columns: the command line (with --backend) is on one line of its panel.
    assert main(["screenshot", str(out), "--memory-limit", "free", "--size", "200x48"]) == 0
    svg = out.read_text().replace("&#160;", " ")
    assert "This device · free" in svg
    words = " ".join(re.sub(r"<[^>]+>", " ", svg).split())  # the command line may wrap
    assert "--memory-limit free" in words
