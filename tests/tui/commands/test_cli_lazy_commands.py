"""A start builds only the parser of the command it runs; `--help` still lists them all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tui.cli import build_parser, main
from tui.commands.registry import COMMANDS

ROOT = Path(__file__).resolve().parents[3]


def test_the_list_of_commands_reads_as_the_full_parsers() -> None:
    """`vramscope --help` from the names and one-line helps reads word for word as the
    help of the parser that imported every command's module."""
    assert build_parser("").format_help() == build_parser().format_help()
    names = [c.name for c in COMMANDS]
    assert names == sorted(names)  # the order --help lists them in


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert f"    {command.name} " in out


@pytest.mark.parametrize("words", [["explore"], ["--preset", "gfx1151"]])
def test_the_explorer_imports_no_other_commands_module(words: list[str]) -> None:
    """`vramscope explore` (and `vramscope --flag`) builds the explorer's parser only:
    the other commands' modules and what their flags import (the calibration, the
    measurement history's report, the engines) stay out of its start."""
    code = (
        "import sys; from tui.cli import main\n"
        "try:\n    main([*sys.argv[1:], '--help'])\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('tui.', 'core.', "
        "'hip_backend')))), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *words],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert "--max-tokens" in done.stdout  # the explorer's own help, in full
    loaded = set(done.stderr.split())
    commands = {f"tui.commands.{c.module}" for c in COMMANDS}
    assert loaded & commands == {"tui.commands.explore"}
    assert not any(m.startswith(("core.calibration", "hip_backend")) for m in loaded)
