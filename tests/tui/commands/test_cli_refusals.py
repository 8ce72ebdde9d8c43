"""Refusals before any work, naming the flag and the reason: a result file the command
could not write (a folder, a FIFO) is refused before a single run or render."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tui.cli import main


def test_table_out_a_directory_is_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["table", "Qwen/Qwen2.5-7B-Instruct", "--out", str(tmp_path), "--no-history"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert (
        err
        == f"vramscope: error: --out: cannot write {tmp_path}: is a directory; name a file in it\n"
    )


def test_screenshot_into_a_fifo_is_refused_before_the_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_path = tmp_path / "shot.svg"
    os.mkfifo(out_path)  # no reader: writing would block forever
    assert main(["screenshot", str(out_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"vramscope: error: OUT: cannot write {out_path}: not a regular file\n"


def test_a_result_file_is_written_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_path = tmp_path / "shot.svg"
    assert main(["screenshot", str(out_path)]) == 0
    assert out_path.read_text().startswith("<svg")
    assert [p.name for p in tmp_path.iterdir()] == ["shot.svg"]  # no temporary left
