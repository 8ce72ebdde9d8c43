"""`vramscope measure` and `table` progress on stderr, as a user sees it (real processes:
the command, its measuring child, a pseudo-terminal for the live display)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.tui.commands.test_cli_measure import ROOT, vramscope

RUN = ["--prompt-tokens", "24", "--gen-tokens", "3", "--warmup-tokens", "2", "--device", "cpu"]
RUN += ["--no-history"]
PHASES = ["engine start (torch)", "load", "warm-up prefill", "warm-up decode", "prefill", "decode"]
PHASE_LINE = re.compile(r"^vramscope: (.+?): (started|done in (\d+\.\d\d) s(?: \((.*)\))?)$")


def phase_lines(stderr: str) -> list[tuple[str, str, str]]:
    """(phase, 'started' | 'done', figures) for each phase line, in order."""
    out = []
    for line in stderr.splitlines():
        m = PHASE_LINE.match(line)
        if m:
            out.append((m[1], "started" if m[2] == "started" else "done", m[4] or ""))
    return out


def test_without_a_terminal_each_phase_starts_and_ends_on_its_own_line(tiny_llama: Path) -> None:
    pytest.importorskip("torch")
    done = vramscope("measure", str(tiny_llama), *RUN)
    assert done.returncode == 0, done.stderr
    lines = phase_lines(done.stderr)
    # Every phase once, started before it is done, in the order the run goes through them.
    assert [p for p, what, _ in lines if what == "started"] == PHASES
    assert [p for p, what, _ in lines if what == "done"] == PHASES
    for phase in PHASES:
        assert lines.index((phase, "started", "")) < next(
            i for i, (p, what, _) in enumerate(lines) if p == phase and what == "done"
        )
    figures = {p: f for p, what, f in lines if what == "done"}
    assert figures["prefill"].startswith("24/24 tokens, ")  # P, counted in tokens
    assert figures["decode"].startswith("3/3 tokens, ")  # G
    assert figures["warm-up decode"].startswith("2/2 tokens, ")
    assert re.fullmatch(r"3/3 tokens, [\d,]+\.\d tokens/s", figures["decode"])
    assert re.fullmatch(r"\d+/\d+ tensors", figures["load"])
    assert "\x1b" not in done.stderr and "\r" not in done.stderr  # no live display
    assert "started" not in done.stdout  # stdout is the result only
    assert "Measured peak:" in done.stdout


def test_the_mlx_engine_counts_prompt_tokens_and_times_its_load(tiny_llama: Path) -> None:
    done = vramscope("measure", str(tiny_llama), *RUN, "--engine", "mlx")
    assert done.returncode == 0, done.stderr
    lines = phase_lines(done.stderr)
    names = ["engine start (mlx)", *PHASES[1:]]
    assert [p for p, what, _ in lines if what == "started"] == names
    figures = {p: f for p, what, f in lines if what == "done"}
    assert figures["load"] == ""  # mlx-lm's load reports no count: its seconds only
    assert figures["prefill"].startswith("24/24 tokens, ")
    assert figures["decode"].startswith("3/3 tokens, ")


def test_quiet_shows_no_progress_and_json_stdout_stays_json(tiny_llama: Path) -> None:
    pytest.importorskip("torch")
    quiet = vramscope("measure", str(tiny_llama), *RUN, "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""  # no phase lines, no notices (this run has no warnings)
    assert "Measured peak:" in quiet.stdout

    as_json = vramscope("measure", str(tiny_llama), *RUN, "--json")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)  # the whole of stdout parses
    assert doc["measured"]["prompt_tokens"] == 24
    assert [p for p, what, _ in phase_lines(as_json.stderr) if what == "done"] == PHASES

    both = vramscope("measure", str(tiny_llama), *RUN, "--json", "--quiet")
    assert both.returncode == 0, both.stderr
    assert json.loads(both.stdout)["measured"]["gen_tokens"] == 3
    assert both.stderr == ""


def test_a_run_that_stops_says_where(tiny_llama: Path) -> None:
    # Half a second is less than the child takes to start (Python, torch, kernels).
    done = vramscope("measure", str(tiny_llama), *RUN, "--timeout", "0.5")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    stop = next(i for i, line in enumerate(lines) if "stopped after" in line)
    assert re.fullmatch(
        r"vramscope: engine start \(torch\): stopped after \d+\.\d\d s", lines[stop]
    )
    assert "measurement failed (timed out)" in lines[stop + 1]
    assert not any("done in" in line for line in lines)


def test_table_shows_each_runs_phases_after_its_count(tiny_llama: Path) -> None:
    pytest.importorskip("torch")
    args = ["table", str(tiny_llama), "--contexts", "12,16", "--budgets", "64"]
    args += ["--gen-tokens", "2", "--warmup-tokens", "0", "--device", "cpu", "--no-history"]
    done = vramscope(*args)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("vramscope: [1/2] "))
    second = next(i for i, line in enumerate(lines) if line.startswith("vramscope: [2/2] "))
    for start, end, prompt in ((first, second, 10), (second, len(lines), 14)):
        run = phase_lines("\n".join(lines[start:end]))
        assert [p for p, what, _ in run if what == "done"] == [
            "engine start (torch)",
            "load",
            "warm-up prefill",  # the warm-up decode has 0 tokens: no phase
            "prefill",
            "decode",
        ]
        assert dict((p, f) for p, w, f in run if w == "done")["prefill"].startswith(
            f"{prompt}/{prompt} tokens"
        )
    assert "| Model | Engine | Context |" in done.stdout

    quiet = vramscope(*args, "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert quiet.stdout.count("\n") == done.stdout.count("\n")  # the same table


def run_on_a_terminal(args: list[str], timeout: float = 240) -> tuple[int, str, str]:
    """Run `vramscope ARGS` with stderr on a pseudo-terminal (stdout a pipe): the exit
    status, what the terminal received and stdout."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
    process = subprocess.Popen(
        [sys.executable, "-m", "tui", *args],
        stdout=subprocess.PIPE,
        stderr=follower,
        cwd=ROOT,
        env=env,
    )
    os.close(follower)
    received = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: the last writer closed the terminal
                    break
                if not data:
                    break
                received += data
            elif process.poll() is not None:
                break
        assert process.stdout is not None
        stdout = process.stdout.read().decode()
        return process.wait(timeout=30), received.decode("utf-8", "replace"), stdout
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()


def test_on_a_terminal_a_live_display_shows_each_phase(tiny_llama: Path) -> None:
    pytest.importorskip("torch")
    status, screen, stdout = run_on_a_terminal(["measure", str(tiny_llama), *RUN])
    assert status == 0, screen
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    last_frame = plain.split("engine start (torch)")[-1]  # the display's final repaint
    assert "━" in last_frame  # rich's bars
    for words in ("load", "warm-up prefill", "warm-up decode", "24/24 tokens", "3/3 tokens"):
        assert words in last_frame, words
    decode = next(line for line in last_frame.splitlines() if line.startswith("decode"))
    assert re.search(r"3/3 tokens\s+[\d,]+\.\d tokens/s\s+\d+\.\d s", decode), decode
    assert "\x1b[" in screen  # drawn in place, with colour
    assert "started" not in plain  # not the line-per-phase form
    assert "Measured peak:" in stdout and "\x1b" not in stdout  # stdout untouched
