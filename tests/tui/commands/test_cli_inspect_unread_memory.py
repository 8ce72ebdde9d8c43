"""`inspect` when /proc/meminfo gives no figure (hidden, MemTotal 0, non-ASCII digits,
past 2^64-1 bytes): mlxcel's banner keeps its fallback of 0 bytes, one warning line
says the memory was not read, vramscope claims no largest context or advice, and
`--check` exits 2 rather than answering "does not fit"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.device import reading
from core.probes.meminfo import meminfo_fault, read_meminfo, read_meminfo_pool
from tui.cli import main

QWEN = "Qwen/Qwen2.5-7B-Instruct"
UNREAD = {
    "MemTotal 0": "MemTotal:        0 kB\nMemFree:   1024 kB\n",
    "non-ASCII digits": "MemTotal: \u0663\u0662\u0660\u0660 kB\nMemAvailable: \uff11\uff12 kB\n",
    "past u64 (1e20 kB)": "MemTotal:       100000000000000000000 kB\n",
    "past u64 once in bytes": "MemTotal:       18446744073709551615 kB\n",
}


@pytest.fixture
def proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty /proc for the probes (no meminfo: a hidden /proc)."""
    monkeypatch.setattr(reading, "PROC_ROOT", tmp_path)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["inspect", QWEN, "--backend", "cpu", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_said_not_read(out: str, err: str) -> None:
    warnings = [line for line in err.splitlines() if "available memory was not read" in line]
    assert len(warnings) == 1, err
    assert warnings[0].startswith("vramscope: warning: ")
    # mlxcel's banner keeps its contract fallback (0 bytes: does not fit) untouched ...
    assert "  Available:       0 bytes" in out.splitlines()
    assert "DOES NOT FIT" in out
    # ... and vramscope's own lines claim nothing from it.
    assert "vramscope: largest context that fits: not answered" in out
    assert "vramscope: advice:" not in out


def test_a_hidden_proc_is_said_and_check_exits_2(
    proc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--check")
    assert code == 2
    assert_said_not_read(out, err)
    assert f"{proc / 'meminfo'} cannot be read" in err


@pytest.mark.parametrize("case", list(UNREAD))
def test_a_meminfo_without_a_figure_is_said_and_check_exits_2(
    case: str, proc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (proc / "meminfo").write_text(UNREAD[case], encoding="utf-8")
    code, out, err = run(capsys, "--check")
    assert code == 2, (case, err)
    assert_said_not_read(out, err)
    assert "1.02e23" not in out and "102400000000000000000000" not in out


def test_json_check_exits_2_and_says_so(proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--json", "--check")
    assert code == 2
    report = json.loads(out)
    assert report["budget_bytes"] == 0 and report["fits"] is False  # mlxcel's keys, its fallback
    assert "cannot be read" in report["largest_context"]["unread_memory"]
    assert report["largest_context"]["tokens"] is None
    assert report["advice"] == []
    assert "available memory was not read" in err


def test_a_read_figure_still_gives_the_verdict(
    proc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (proc / "meminfo").write_text("MemTotal: 4096 kB\nMemAvailable: 2048 kB\n", encoding="ascii")
    code, out, err = run(capsys, "--check")
    assert code == 1  # read, and it does not fit: --check's own answer
    assert "not read" not in err
    assert f"  Available:       2.0 MiB ({2048 * 1024} bytes)" in out.splitlines()
    (proc / "meminfo").write_text(f"MemAvailable: {64 * 1024**2} kB\n", encoding="ascii")
    code, _, err = run(capsys, "--check")
    assert code == 0 and "not read" not in err


def test_the_probe_says_why(tmp_path: Path) -> None:
    path = tmp_path / "meminfo"
    assert read_meminfo(path) is None
    assert "cannot be read" in (meminfo_fault(path) or "")
    for case, text in UNREAD.items():
        path.write_text(text, encoding="utf-8")
        assert read_meminfo(path) is None, case
        assert read_meminfo_pool(path) is None, case
        assert meminfo_fault(path), case
    path.write_text("MemTotal: 18014398509481983 kB\n", encoding="ascii")  # 2^64 - 1024 bytes
    assert read_meminfo(path) == 18014398509481983 * 1024
    assert meminfo_fault(path) is None
