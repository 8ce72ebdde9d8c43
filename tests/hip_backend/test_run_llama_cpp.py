"""`vramscope run -- llama-completion ... --log-file LOG` (#40): llama.cpp's own buffer
lines, read from its log after the run, beside vramscope's load for the same flags and
the kernel's peak (text and `run --json`'s `llama_cpp` object).

The first test runs a stand-in program named `llama-completion` that writes a log the
vendored llama.cpp really printed (tests/core/load/data/llama_completion_gemma3.log:
`-c 5000 -np 4 -ctk q8_0 -ctv q8_0 -fa on -ngl 0` on the golden gemma3); the opt-in
test (marker llama_cpp, `make test-llama`) runs the built llama.cpp itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.load.llama_cpp_log import (
    PRINTED_RESOLUTION_BYTES,
    LlamaCppBufferKind,
    parse_llama_log,
)
from core.measurement.fields import ExternalFields
from core.measurement.history import decode_record
from tests.gguf_llama_models import write_model
from tests.hip_backend.test_external_run import finished

DATA = Path(__file__).resolve().parents[1] / "core" / "load" / "data"
FLAGS = ["-c", "5000", "-np", "4", "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on", "-ngl", "0"]
STAND_IN = """#!{python}
import sys, time
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
with open(log, "w") as out:
    out.write(open({source!r}, errors="replace").read())
block = b"x" * 30_000_000
time.sleep(0.6)
"""


def env_for(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"),
                XDG_CACHE_HOME=str(tmp_path / "cache"), HOME=str(tmp_path / "home"))  # fmt: skip


def test_llama_cpps_log_lines_stand_beside_the_load_and_the_kernels_peak(
    tmp_path: Path,
) -> None:
    program = tmp_path / "bin" / "llama-completion"
    program.parent.mkdir()
    source = DATA / "llama_completion_gemma3.log"
    program.write_text(STAND_IN.format(python=sys.executable, source=str(source)))
    program.chmod(0o755)
    model = write_model(tmp_path, "gemma3")
    log = tmp_path / "llama.log"
    command = [str(program), "-m", str(model), *FLAGS, "--log-file", str(log)]
    ran = finished(env_for(tmp_path), "run", "--json", "--no-history", "--", *command)
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)["llama_cpp"]
    printed = parse_llama_log(source.read_text(errors="replace")).by_device()
    assert set(printed) == {"CPU", "CPU_Mapped"}  # -ngl 0: all on the host
    terms = {t["kind"]: t for t in doc["terms"]}
    assert {t["placement"] for t in doc["terms"]} == {"host"}
    assert terms["model"]["llama_cpp_bytes"] == printed["CPU_Mapped"]["model"]
    assert terms["kv"]["llama_cpp_bytes"] == printed["CPU"]["kv"]
    assert terms["compute"]["llama_cpp_bytes"] == printed["CPU"]["compute"]
    # vramscope's figure for the same flags: to the printed 0.01 MiB, the compute fitted.
    for kind in ("model", "kv", "output"):
        t = terms[kind]
        assert abs(t["vramscope_bytes"] - t["llama_cpp_bytes"]) <= 2 * PRINTED_RESOLUTION_BYTES
    compute = terms["compute"]
    assert abs(compute["vramscope_bytes"] / compute["llama_cpp_bytes"] - 1) <= 0.10
    assert doc["tokens"] == 5000 and doc["n_gpu_layers"] == 0 and doc["log_read"] is True
    assert doc["kernel_peak_bytes"] > 30_000_000  # the stand-in's own resident memory
    text = finished(env_for(tmp_path), "run", "--", *command)
    assert text.returncode == 0, text.stderr
    # Recorded with the run: the history line holds each buffer beside the load.
    history = tmp_path / "state" / "vramscope" / "measurements.jsonl"
    assert history.is_file(), text.stderr
    (line,) = history.read_bytes().splitlines()
    recorded = decode_record(line).fields
    assert isinstance(recorded, ExternalFields) and recorded.llama_cpp_buffers is not None
    assert [b.to_json() for b in recorded.llama_cpp_buffers] == doc["terms"]
    err = text.stderr.splitlines()
    start = next(i for i, x in enumerate(err) if "llama.cpp's own buffers (its --log-file" in x)
    lines = err[start + 1 :]
    assert [x.split()[1:3] for x in lines[:4]] == [
        ["host", "model"], ["host", "kv"], ["host", "output"], ["host", "compute"],
    ]  # fmt: skip
    assert "the kernel's peak" in lines[-1]


SERVER_ON_STDERR = """#!{python}
import sys, time
sys.stderr.write(open({source!r}, errors="replace").read())
sys.stderr.flush()
block = b"x" * 30_000_000
time.sleep(0.6)
print("served", flush=True)
"""


def test_a_llama_server_on_path_is_read_from_its_own_stderr(tmp_path: Path) -> None:
    """No --log-file: `run` tees the server's stderr; the terminal still gets every line
    and the buffer lines are read from the copy."""
    program = tmp_path / "bin" / "llama-server"
    program.parent.mkdir()
    source = DATA / "llama_completion_gemma3.log"
    program.write_text(SERVER_ON_STDERR.format(python=sys.executable, source=str(source)))
    program.chmod(0o755)
    model = write_model(tmp_path, "gemma3")
    env = env_for(tmp_path)
    env["PATH"] = f"{program.parent}{os.pathsep}{env.get('PATH', '')}"
    ran = finished(env, "run", "--json", "--", "llama-server", "-m", str(model), *FLAGS)
    assert ran.returncode == 0, ran.stderr
    # Passed through whole: every line the server wrote is on run's stderr, in order.
    written = source.read_text(errors="replace")
    assert written in ran.stderr
    assert ran.stdout.startswith("served\n")
    doc = json.loads(ran.stdout[len("served\n") :])["llama_cpp"]
    assert doc["log_read"] is True and doc["log_source"] == "stderr"
    printed = parse_llama_log(written).by_device()
    terms = {t["kind"]: t for t in doc["terms"]}
    assert terms["model"]["llama_cpp_bytes"] == printed["CPU_Mapped"]["model"]
    assert terms["kv"]["llama_cpp_bytes"] == printed["CPU"]["kv"]
    assert terms["compute"]["llama_cpp_bytes"] == printed["CPU"]["compute"]
    # gemma3 prints two KV buffers (sliding-window and full), each to 0.01 MiB
    kv_gap = terms["kv"]["vramscope_bytes"] - printed["CPU"]["kv"]
    assert abs(kv_gap) <= 2 * PRINTED_RESOLUTION_BYTES
    history = tmp_path / "state" / "vramscope" / "measurements.jsonl"
    (line,) = history.read_bytes().splitlines()
    recorded = decode_record(line).fields
    assert isinstance(recorded, ExternalFields) and recorded.llama_cpp_buffers is not None
    assert [b.to_json() for b in recorded.llama_cpp_buffers] == doc["terms"]


def test_a_hf_model_is_read_from_the_hugging_face_cache(tmp_path: Path) -> None:
    """`-hf REPO:QUANT`: the file llama.cpp downloaded, read from the HF cache (never
    the Hub); one not cached is said, and the run is still measured and recorded."""
    program = tmp_path / "bin" / "llama-server"
    program.parent.mkdir()
    source = DATA / "llama_completion_gemma3.log"
    program.write_text(SERVER_ON_STDERR.format(python=sys.executable, source=str(source)))
    program.chmod(0o755)
    snapshot = tmp_path / "hub" / "models--someone--gemma3-GGUF" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    write_model(tmp_path, "gemma3").rename(snapshot / "gemma3-Q8_0.gguf")
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("abc123")
    env = env_for(tmp_path)
    env["HF_HUB_CACHE"] = str(tmp_path / "hub")
    env["HF_HUB_OFFLINE"] = "1"
    base = ["run", "--json", "--no-history", "--", str(program)]
    ran = finished(env, *base, "-hf", "someone/gemma3-GGUF:Q8_0", *FLAGS)
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout[len("served\n") :])["llama_cpp"]
    assert doc["model"] == "someone/gemma3-GGUF:Q8_0" and doc["architecture"] == "gemma3"
    terms = {t["kind"]: t for t in doc["terms"]}
    printed = parse_llama_log(source.read_text(errors="replace")).by_device()
    assert terms["model"]["llama_cpp_bytes"] == printed["CPU_Mapped"]["model"]
    gap = terms["model"]["vramscope_bytes"] - printed["CPU_Mapped"]["model"]
    assert abs(gap) <= 2 * PRINTED_RESOLUTION_BYTES
    # The run says what it holds, and no mlxcel estimate is attempted for a GGUF.
    assert "its buffers are held against vramscope's llama.cpp load" in ran.stderr
    assert "no estimate for" not in ran.stderr
    missing = finished(env, *base, "-hf", "someone/other-GGUF:Q8_0", *FLAGS)
    assert missing.returncode == 0, missing.stderr
    assert "-hf someone/other-GGUF:Q8_0: not in the Hugging Face cache whole" in missing.stderr
    assert json.loads(missing.stdout[len("served\n") :])["llama_cpp"] is None
    assert "Traceback" not in missing.stderr


def test_without_buffer_lines_the_run_says_how_to_get_them(tmp_path: Path) -> None:
    program = tmp_path / "bin" / "llama-server"
    program.parent.mkdir()
    program.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(0.4)\n")
    program.chmod(0o755)
    model = write_model(tmp_path, "llama")
    ran = finished(env_for(tmp_path), "run", "--no-history", "--", str(program), "-m", str(model))
    assert ran.returncode == 0, ran.stderr
    assert "no buffer lines in its stderr: llama.cpp writes them" in ran.stderr
    assert "llama.cpp's own buffers (no log read)" in ran.stderr
    assert "no -np: llama-server's auto, 4 slots on one unified cache" in ran.stderr
    assert "Traceback" not in ran.stderr


def run_vramscope(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """`python -m tui ARGV` in its own home, asserted to exit 0."""
    ran = subprocess.run(
        [sys.executable, "-m", "tui", *argv],
        cwd=Path(__file__).resolve().parents[2],
        env=env_for(tmp_path),
        capture_output=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr.decode(errors="replace")
    return ran


@pytest.mark.llama_cpp
def test_the_built_llama_cpp_under_run(tmp_path: Path) -> None:
    binary = Path(os.environ["VRAMSCOPE_LLAMA_FIT_PARAMS"]).with_name("llama-completion")
    model = write_model(tmp_path, "gemma3")
    log = tmp_path / "llama.log"
    command = [str(binary), "-m", str(model), *FLAGS, "--no-repack", "-fit", "off"]
    command += ["-n", "1", "-p", "a", "-no-cnv", "--no-warmup", "-t", "1", "-v"]
    command += ["--log-file", str(log)]
    # llama.cpp's log thread can lose its last lines at exit, in its log file as on its
    # stderr (test_llama_cpp_live's load_log; seen here once in 21 runs, the compute
    # buffer's line): a run whose log lacks a buffer line is run again, at most four times.
    for _ in range(4):
        log.unlink(missing_ok=True)
        ran = run_vramscope(tmp_path, "run", "--json", "--no-history", "--", *command)
        # stdout is the command's too (its generated token), then run's document.
        out = ran.stdout.decode(errors="replace")
        start = out.rfind('{\n  "engine": "external"')
        assert start >= 0, out[-2000:]
        doc = json.loads(out[start:])["llama_cpp"]
        assert doc["log_read"] is True
        terms = {t["kind"]: t for t in doc["terms"]}
        if all(
            terms[k]["llama_cpp_bytes"] is not None for k in ("model", "kv", "output", "compute")
        ):
            break
    else:
        pytest.fail(f"llama.cpp's log file held no complete log in four runs: {doc}")
    for kind in ("model", "kv", "output"):
        t = terms[kind]
        assert abs(t["vramscope_bytes"] - t["llama_cpp_bytes"]) <= 2 * PRINTED_RESOLUTION_BYTES
    compute = terms["compute"]
    assert abs(compute["vramscope_bytes"] / compute["llama_cpp_bytes"] - 1) <= 0.10


@pytest.mark.llama_cpp
def test_the_built_llama_cpp_is_read_from_its_stderr_and_shown_beside_the_estimate(
    tmp_path: Path,
) -> None:
    """No --log-file: `run` tees llama.cpp's stderr, the terminal gets every line, and its
    buffer lines are read from the copy and printed beside vramscope's load."""
    binary = Path(os.environ["VRAMSCOPE_LLAMA_FIT_PARAMS"]).with_name("llama-completion")
    model = write_model(tmp_path, "gemma3")
    command = [str(binary), "-m", str(model), *FLAGS, "--no-repack", "-fit", "off"]
    command += ["-n", "1", "-p", "a", "-no-cnv", "--no-warmup", "-t", "1", "-v"]
    history = tmp_path / "state" / "vramscope" / "measurements.jsonl"
    # llama.cpp's log thread can lose its last lines at exit (test_llama_cpp_live's
    # load_log): a run without every buffer line is run again, at most four times.
    for _ in range(4):
        history.unlink(missing_ok=True)
        ran = run_vramscope(tmp_path, "run", "--", *command)
        err = ran.stderr.decode(errors="replace")
        printed = parse_llama_log(err)  # llama.cpp's own lines, passed through
        if printed.model and printed.kv_caches and printed.output and printed.compute:
            break
    else:
        pytest.fail(f"llama.cpp printed no complete log in four runs: {err[-2000:]}")
    lines = err.splitlines()
    start = next(i for i, x in enumerate(lines) if "llama.cpp's own buffers (its stderr)" in x)
    rows = {tuple(x.split()[1:3]): x for x in lines[start + 1 : start + 5]}
    assert set(rows) == {("host", k) for k in ("model", "kv", "output", "compute")}
    assert all(
        "llama.cpp" in x and "vramscope" in x and "none printed" not in x for x in rows.values()
    )
    assert "the kernel's peak" in lines[start + 5]
    (line,) = history.read_bytes().splitlines()
    recorded = decode_record(line).fields
    assert isinstance(recorded, ExternalFields) and recorded.llama_cpp_arch == "gemma3"
    assert recorded.llama_cpp_buffers is not None
    compute = next(b for b in recorded.llama_cpp_buffers if b.kind is LlamaCppBufferKind.COMPUTE)
    assert compute.llama_cpp_bytes == printed.by_device()["CPU"]["compute"]
    assert abs(compute.vramscope_bytes / compute.llama_cpp_bytes - 1) <= 0.10
