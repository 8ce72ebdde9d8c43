"""`vramscope run -- CMD` against real processes on this machine (#27 item 1): the
peak of a known allocation, a forked child counted, the exit status passed through,
and no process of the command left once `run` is stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hip_backend import check_command, run_command
from tests.hip_backend.test_dies_with_parent import descendants_of, left_after_grace

ROOT = Path(__file__).resolve().parents[2]
ALLOCATED = 200_000_000
# The command touches every page of N bytes, frees them and lives on, so that a sample
# after the free still reads its VmHWM (each process's own high-water mark).
ALLOCATE = "import time\ntime.sleep(0.2)\nblock = b'x' * {n}\ndel block\ntime.sleep(0.7)\n"
FORK = (
    "import os, time\n"
    "time.sleep(0.2)\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    block = b'x' * {n}\n"
    "    time.sleep(0.7)\n"
    "    os._exit(0)\n"
    "os.waitpid(pid, 0)\n"
)


def vramscope(*argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def finished(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    """`vramscope ARGV...` run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "tui", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("interval", [0.05, 0.25])
def test_a_freed_allocation_is_the_peak_over_the_interpreter_s_own(interval: float) -> None:
    # The figure counts the interpreter too (VmHWM is the whole process's): measured
    # over the same command allocating nothing, the peak is the allocation within 2%.
    base = run_command([sys.executable, "-c", ALLOCATE.format(n=0)], interval)
    done = run_command([sys.executable, "-c", ALLOCATE.format(n=ALLOCATED)], interval)
    assert done.exit_status == 0 and done.peaks.samples >= 3
    for figure, baseline in (
        (done.peaks.host_hwm, base.peaks.host_hwm),  # sampled
        (done.host_peak_bytes, base.host_peak_bytes),  # with ru_maxrss at the end
    ):
        assert abs((figure - baseline) - ALLOCATED) <= 0.02 * ALLOCATED, (figure, baseline)


def test_a_forked_child_that_allocates_is_counted() -> None:
    done = run_command([sys.executable, "-c", FORK.format(n=ALLOCATED)], 0.05)
    base = run_command([sys.executable, "-c", FORK.format(n=0)], 0.05)
    # Sampled, not ru_maxrss: the parent alone never held the block.
    assert done.peaks.host_hwm - base.peaks.host_hwm >= 0.98 * ALLOCATED


def test_the_command_s_exit_status_is_passed_through() -> None:
    assert run_command([sys.executable, "-c", "raise SystemExit(7)"]).exit_status == 7
    killed = run_command([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    assert killed.exit_status == 128 + signal.SIGKILL


def test_the_command_line_passes_the_status_through_and_says_its_errors(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path))
    failing = "import time; time.sleep(0.6); print('out'); raise SystemExit(3)"  # sampled
    ran = vramscope("run", "--", sys.executable, "-c", failing, env=env)
    out, err = ran.communicate(timeout=60)
    assert ran.returncode == 3 and out == "out\n"  # stdout stays the command's
    assert "vramscope: Measured peak:" in err and "exit status 3" in err
    record = json.loads((tmp_path / "vramscope" / "measurements.jsonl").read_text())["result"]
    assert record["engine"] == "external" and record["extra"]["exit_status"] == 3
    missing = vramscope("run", "--", "no-such-program-vramscope", env=env)
    _, err = missing.communicate(timeout=60)
    assert missing.returncode == 2
    assert err.strip().splitlines() == [
        "vramscope: error: CMD: 'no-such-program-vramscope' is not a program on PATH"
    ]
    not_runnable = tmp_path / "notes.txt"
    not_runnable.write_text("not a program\n")
    refused = vramscope("run", "--no-history", "--", str(not_runnable), env=env)
    _, err = refused.communicate(timeout=60)
    assert refused.returncode == 2
    assert (
        err.splitlines()[-1] == f"vramscope: error: cannot run '{not_runnable}': Permission denied"
    )
    with pytest.raises(Exception, match="give the command"):
        check_command([])


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_run_leaves_no_process_of_the_command(signum: int, status: int) -> None:
    sleeper = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "time.sleep(60)\n"
    )
    ran = vramscope("run", "--no-history", "--", sys.executable, "-c", sleeper)
    deadline = time.monotonic() + 30
    while len(descendants_of(ran.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # the holder, the command and its child
    assert len(descendants_of(ran.pid)) == 3
    ran.send_signal(signum)
    assert ran.wait(timeout=60) == status
    assert left_after_grace(ran.pid) == []


def test_a_killed_run_takes_the_command_with_it() -> None:
    ran = vramscope(
        "run", "--no-history", "--", sys.executable, "-c", "import time; time.sleep(60)"
    )
    deadline = time.monotonic() + 30
    while len(descendants_of(ran.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    ran.kill()  # no clean-up of its own: the holder's parent watch ends the group
    ran.wait(timeout=60)
    assert left_after_grace(ran.pid) == []


def write_word_tokenizer(folder: Path, vocab_size: int) -> None:
    """A word-level tokenizer (`w1 w2 ...`) that mlx-lm's loader takes, written offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0} | {f"w{i}": i for i in range(1, vocab_size)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()  # type: ignore[assignment]
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "eos_token": "w1"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))


@pytest.mark.slow
def test_a_real_mlx_lm_generate_beside_the_estimate_then_table_and_calibrate(
    tiny_llama: Path, tmp_path: Path
) -> None:
    import shutil

    model = tmp_path / "tiny-llama-chat"
    shutil.copytree(tiny_llama, model)
    write_word_tokenizer(model, 512)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), HF_HUB_OFFLINE="1")
    generate = [sys.executable, "-m", "mlx_lm", "generate", "--model", str(model)]
    generate += ["--prompt", "w5 w6", "--max-tokens", "16", "--ignore-chat-template"]
    ran = vramscope("run", "--", *generate, env=env)
    out, err = ran.communicate(timeout=300)
    assert ran.returncode == 0, err
    assert "Generation: 16 tokens" in out  # mlx-lm's own output, untouched
    lines = [line.removeprefix("vramscope: ") for line in err.splitlines()]
    assert (
        "note: from the command's flags (mlx-lm): the prompt's tokens (text) are not counted"
        in lines
    )
    estimate = next(line for line in lines if line.startswith("Estimate:"))
    assert "at 16 tokens (CPU formula)" in estimate
    assert any(line.startswith("Measured peak:") for line in lines)
    assert any(line.startswith("Margin:") for line in lines)
    history = tmp_path / "state" / "vramscope" / "measurements.jsonl"
    record = json.loads(history.read_text().splitlines()[-1])["result"]
    assert (record["engine"], record["device_kind"], record["gen_tokens"]) == (
        "external",
        "cpu",
        16,
    )
    assert record["model"] == str(model) and record["extra"]["figure"] == "host"
    assert record["estimate_bytes"] > 0 and record["peak_bytes"] > 100_000_000  # mlx + python
    # A second model's run (a command that holds 200 MB), then both read back.
    other = vramscope(
        "run",
        "--model",
        str(tiny_llama),
        "--max-tokens",
        "16",
        "--",
        sys.executable,
        "-c",
        ALLOCATE.format(n=ALLOCATED),
        env=env,
    )
    assert other.wait(timeout=120) == 0
    fit = finished(env, "calibrate", "--engine", "external", "--json")
    assert fit.returncode == 0, fit.stderr
    calibrations = json.loads(fit.stdout)["calibrations"]
    assert [c["engine"] for c in calibrations] == ["external"]
    assert calibrations[0]["figure"].startswith("the command's host RSS")
    table = finished(env, "table", "--history", str(model), str(tiny_llama))
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if "| your command |" in line]
    assert len(rows) == 2 and all("| CPU | fp16 | 16 |" in row for row in rows)
    assert "your command: cpu host; peak: host RSS of the command's processes" in table.stdout
