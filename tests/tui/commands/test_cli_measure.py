"""`vramscope measure` and `vramscope table` as a user runs them (real processes: the
command, its measuring child, a pseudo-terminal for the live display): the result on
stdout, the progress on stderr.

Tests that read the same kind of run share one, made once for the module in a home of
its own (`terminal_measure`, `json_measure`, `table_run`): each is a CLI process and
its torch children (2-3 s of processor time a child), and the tests check different
things of it.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.measurement.history import HISTORY_FILE, HistoryStore
from tests.conftest import ESTIMATOR_ENV, HUB_ENV, OWN_FOLDERS, TERMINAL_ENV
from tests.installed import need
from tui.cli import main

ROOT = Path(__file__).resolve().parents[3]
FAST = ["--prompt-tokens", "8", "--gen-tokens", "2", "--warmup-tokens", "0", "--device", "cpu"]
WORKLOAD = ["--prompt-tokens", "24", "--gen-tokens", "3", "--warmup-tokens", "2"]
WORKLOAD += ["--device", "cpu"]
RUN = [*WORKLOAD, "--no-history"]
PHASES = ["engine start (torch)", "load", "warm-up prefill", "warm-up decode", "prefill", "decode"]
PHASE_LINE = re.compile(r"^vramscope: (.+?): (started|done in (\d+\.\d\d) s(?: \((.*)\))?)$")


def vramscope(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=None if env is None else dict(env),
    )


def phase_lines(stderr: str) -> list[tuple[str, str, str]]:
    """(phase, 'started' | 'done', figures) for each phase line, in order."""
    out = []
    for line in stderr.splitlines():
        m = PHASE_LINE.match(line)
        if m:
            out.append((m[1], "started" if m[2] == "started" else "done", m[4] or ""))
    return out


@dataclass(frozen=True)
class Ran:
    """One module-scoped run: what the command did, and the home it ran in."""

    done: subprocess.CompletedProcess[str]
    home: Path

    def history(self) -> HistoryStore:
        return history_in(self.home)


def history_in(home: Path) -> HistoryStore:
    """The history a run in `home` (`own_home_env`) keeps."""
    return HistoryStore(home / OWN_FOLDERS["XDG_STATE_HOME"] / "vramscope" / HISTORY_FILE)


def own_home_env(home: Path) -> dict[str, str]:
    """This process's environment with `home` laid out as tests/conftest.py's
    `_own_home` lays out a test's: a module fixture is made before any test's own home,
    in this process's."""
    dropped = (*ESTIMATOR_ENV, *HUB_ENV, *TERMINAL_ENV)
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env |= {"HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return env | {name: str(home / below) for name, below in OWN_FOLDERS.items()}


def run_in_own_home(home: Path, *args: str) -> Ran:
    """`vramscope ARGS` in `home` (`own_home_env`)."""
    return Ran(vramscope(*args, env=own_home_env(home)), home)


@dataclass(frozen=True)
class OnATerminal:
    """A run with stderr on a pseudo-terminal: its status, what the terminal received,
    stdout, and the home it ran in."""

    status: int
    screen: str
    stdout: str
    home: Path


@pytest.fixture(scope="module")
def terminal_measure(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> OnATerminal:
    """`measure` as a user types it: stderr on a terminal (the live display), the result
    in text on stdout and kept in the history."""
    need("torch")
    home = tmp_path_factory.mktemp("terminal-home")
    args = ["measure", str(tiny_llama), *WORKLOAD, "--inflight-mb", "64"]
    return OnATerminal(*run_on_a_terminal(args, env=own_home_env(home)), home)


@pytest.fixture(scope="module")
def json_measure(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """`measure --json --check --no-history` at the default in-flight budget."""
    need("torch")
    home = tmp_path_factory.mktemp("json-home")
    return run_in_own_home(home, "measure", str(tiny_llama), *RUN, "--json", "--check")


@pytest.fixture(scope="module")
def quiet_json_measure(tiny_llama: Path) -> subprocess.CompletedProcess[str]:
    """`measure --json --quiet --check` with the in-flight budget off: the check's other
    side, and what --quiet leaves of a --json run."""
    need("torch")
    return vramscope(
        "measure", str(tiny_llama), *RUN, "--json", "--quiet", "--check", "--inflight-mb", "0"
    )


TABLE = ["--contexts", "24", "--budgets", "16,0", "--gen-tokens", "4", "--warmup-tokens", "0"]
TABLE += ["--device", "cpu"]


@pytest.fixture(scope="module")
def table_run(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Ran, Path]:
    """`table` of two runs (budgets 16 and 0 MiB at 24 tokens) written to `--out`."""
    need("torch")
    root = tmp_path_factory.mktemp("table")
    home, out = root / "home", root / "results" / "table.md"
    home.mkdir()
    out.parent.mkdir()  # --out never makes a missing folder (test_cli_messages.py)
    return run_in_own_home(home, "table", str(tiny_llama), *TABLE, "--out", str(out)), out


def test_measure_prints_estimate_and_peak_side_by_side(terminal_measure: OnATerminal) -> None:
    done = terminal_measure
    assert done.status == 0, done.screen
    lines = done.stdout.splitlines()
    estimate = next(line for line in lines if line.startswith("Estimate:"))
    peak = next(line for line in lines if line.startswith("Measured peak:"))
    margin = next(line for line in lines if line.startswith("Margin:"))
    assert "at 27 tokens" in estimate  # P + G
    assert "bytes" in peak
    assert "covered" in margin
    assert "in-flight budget 64 MiB" in done.stdout
    assert len(history_in(done.home).read().results) == 1


def test_the_text_names_the_attention_beside_the_engine(
    terminal_measure: OnATerminal, json_measure: Ran
) -> None:
    # The CPU's default: MLX's unfused attention, named in the result and in a notice.
    engine = next(line for line in terminal_measure.stdout.splitlines() if "Engine:" in line)
    assert "MLX's unfused attention" in engine
    assert "vramscope: attention: MLX's unfused fallback" in json_measure.done.stderr


def test_measure_json_carries_the_margin(json_measure: Ran) -> None:
    done = json_measure.done
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    measured = doc["measured"]
    assert measured["estimate_bytes"] == doc["estimate_bytes"]
    assert doc["margin"]["bytes"] == doc["estimate_bytes"] - measured["peak_bytes"]
    assert doc["margin"]["covered"] is True
    assert measured["inflight_mib"] == 1024  # the default budget
    assert json_measure.history().read().results == []


def test_a_failed_measurement_is_one_line_and_exit_2(tiny_llama: Path) -> None:
    # The README's promise for errors: one line, exit 2 (1 is --check's verdict).
    done = vramscope("measure", "google/gemma-2-2b-it", *FAST)
    assert done.returncode == 2
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [
        "vramscope: error: measurement failed (not supported for measurement): model type "
        "'gemma2' is not supported for measurement (supported: llama, mistral, qwen2, qwen3, "
        "qwen3_moe); the estimate still works"
    ]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["measure", "no/such-model"], "no/such-model"),
        (["measure", "x", "--prompt-tokens", "0"], "--prompt-tokens"),
        (["measure", "x", "--device", "tpu"], "--device"),
        (["measure", "x", "--memory-cap", "lots"], "--memory-cap"),
        (["measure", "x", "--timeout", "-1"], "--timeout"),
        (["table", "x", "--contexts", "640,abc"], "--contexts"),
        (["table", "x", "--contexts", "100", "--gen-tokens", "128"], "leaves no prompt tokens"),
        (["table", "x", "--budgets", "-5"], "--budgets"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    args: list[str], words: str, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command's entry point in this process (`python -m tui` exits with what it
    # returns or raises): each is refused before any child, and a process apiece cost
    # 0.2-0.4 s of processor time. test_a_failed_measurement_is_one_line_and_exit_2 and
    # the runs above are whole processes.
    args = [str(tiny_llama) if a == "x" else a for a in args]
    code: int | str | None
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's refusal
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert words in err
    assert "Traceback" not in err


def test_table_writes_the_estimate_against_peak_table(
    tiny_llama: Path, table_run: tuple[Ran, Path]
) -> None:
    ran, out = table_run
    done = ran.done
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text == done.stdout
    rows = [line for line in text.splitlines() if line.startswith(f"| {tiny_llama} |")]
    assert len(rows) == 2
    assert rows[0].split("|")[2:5] == [" torch engine ", " 24 ", " 16 "]
    assert rows[1].split("|")[4] == " 0 (off) "
    assert rows[0].rstrip().endswith("| yes |")
    assert "the estimate covers 1 of 1 measured peaks" in text
    assert "smallest margin is" in text
    assert "ran with the bound off" in text
    assert "[2/2]" in done.stderr


def test_measure_check_exits_1_exactly_when_the_estimate_does_not_cover(
    json_measure: Ran, quiet_json_measure: subprocess.CompletedProcess[str]
) -> None:
    # Budget 0 and no headroom factor: the estimate falls below this CPU peak; the
    # default budget's is covered. The exit code follows the printed verdict.
    for proc in (json_measure.done, quiet_json_measure):
        covered = json.loads(proc.stdout)["margin"]["covered"]
        assert proc.returncode == (0 if covered else 1), proc.stderr


# -- progress on stderr ---------------------------------------------------------------


def test_without_a_terminal_each_phase_starts_and_ends_on_its_own_line(
    json_measure: Ran,
) -> None:
    done = json_measure.done  # the view follows stderr alone, whatever stdout carries
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
    assert json.loads(done.stdout)["measured"]["gen_tokens"] == 3


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


def test_quiet_shows_no_progress_and_json_stdout_stays_json(
    json_measure: Ran, quiet_json_measure: subprocess.CompletedProcess[str]
) -> None:
    # --quiet turns the progress view and the notices off whatever stdout carries
    # (tui/commands/measure.py): the text result is read from the other runs, and
    # table's --quiet is read in text (test_table_shows_each_runs_phases_after_its_count).
    as_json = json_measure.done
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)  # the whole of stdout parses
    assert doc["measured"]["prompt_tokens"] == 24
    assert [p for p, what, _ in phase_lines(as_json.stderr) if what == "done"] == PHASES

    both = quiet_json_measure  # --check and budget 0 too: its status is the verdict's
    assert json.loads(both.stdout)["measured"]["gen_tokens"] == 3
    assert both.stderr == ""  # no phase lines, no notices (the attention's; no warnings)


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


def test_table_shows_each_runs_phases_after_its_count(
    tiny_llama: Path, table_run: tuple[Ran, Path], tmp_path: Path
) -> None:
    done = table_run[0].done
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("vramscope: [1/2] "))
    second = next(i for i, line in enumerate(lines) if line.startswith("vramscope: [2/2] "))
    # Each count names its run (both prompts are 20 tokens: the budget tells them apart).
    assert lines[first].endswith(" at 24 tokens, 16 MiB, torch"), lines[first]
    assert lines[second].endswith(" at 24 tokens, 0 MiB, torch"), lines[second]
    for start, end in ((first, second), (second, len(lines))):
        run = phase_lines("\n".join(lines[start:end]))
        assert [p for p, what, _ in run if what == "done"] == [
            "engine start (torch)",
            "load",
            "warm-up prefill",  # the warm-up decode has 0 tokens: no phase
            "prefill",
            "decode",
        ]
        prefill = dict((p, f) for p, w, f in run if w == "done")["prefill"]
        assert prefill.startswith("20/20 tokens")  # the context less the decode's 4
    assert "| Model | Engine | Context |" in done.stdout

    # --quiet: no count, no phase, the table still on stdout (one run of the two is
    # enough to show it: each run's child is 2-3 s of processor time).
    out = tmp_path / "table.md"
    one_run = [*TABLE[:3], "16", *TABLE[4:]]
    quiet = vramscope("table", str(tiny_llama), *one_run, "--out", str(out), "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    header = done.stdout.split(f"| {tiny_llama} |")[0]
    assert quiet.stdout.startswith(header)  # the same table, of its one run
    assert quiet.stdout.count(f"| {tiny_llama} |") == 1


def run_on_a_terminal(
    args: list[str], env: Mapping[str, str], timeout: float = 240
) -> tuple[int, str, str]:
    """Run `vramscope ARGS` with stderr on a pseudo-terminal (stdout a pipe): the exit
    status, what the terminal received and stdout."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in env.items() if k != "NO_COLOR"}
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


def test_on_a_terminal_a_live_display_shows_each_phase(terminal_measure: OnATerminal) -> None:
    status, screen, stdout = (
        terminal_measure.status,
        terminal_measure.screen,
        terminal_measure.stdout,
    )
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
